"""A policy whose answer breaks its contract (:class:`PolicyContractError`, a bug in the
policy's code, found while the run goes) reaches the user of ``edgespec sim`` as one line
naming the policy, its answer and the rule, exit status 1, in a plain run, a sweep and a
sharded run (it was a traceback)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from edgespec.cli import main
from edgespec.policies import registry
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from tests.sim.helpers import tiny_scenario
from tests.sim.test_shards import pinned
from tests.sim.test_stop_predictor import features
from tests.sim.test_stop_predictor import scenario as stop_scenario


@dataclass(frozen=True, slots=True)
class _Alternate:
    """Fused every other round, without declaring ``may_fuse`` (test-only)."""

    gamma: int = 3

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        return WindowDecision(self.gamma, fused=not obs.previous_fused)


UNDECLARED = (
    "edgespec sim: {where}window policy _Alternate answered WindowDecision(gamma={gamma}, "
    "fused=True), but it does not say it may go fused, so this run takes the simulator's "
    "distributed-only handler set: give the policy a class attribute `may_fuse = True`\n"
)
RUNS: dict[str, tuple[Callable[[], dict[str, Any]], list[str], int, str]] = {
    "plain": (tiny_scenario, [], 3, ""),
    "sweep": (
        tiny_scenario,
        ["--sweep", "policies.window.params.gamma=2,4"],
        2,
        "at sweep point 1 of 2 (policies.window.params.gamma=2): ",
    ),
    "shards": (pinned, ["--shards", "2"], 3, "shard 1 of 2: "),
}
"""A scenario, the flags, the γ of the first fused answer (a sweep stops at its first point)
and where the line says it came from (a shard and a sweep's point name themselves)."""


def _sim(data: dict[str, Any], flags: list[str], tmp_path: Path) -> int:
    file = tmp_path / "scenario.yaml"
    file.write_text(json.dumps(data))  # JSON is YAML
    out = str(tmp_path / "run")
    return main(["sim", str(file), *flags, "--quiet", "--no-plots", "--out", out])


@pytest.mark.parametrize("run", sorted(RUNS))
def test_a_fused_answer_the_policy_did_not_declare_is_one_line(
    run: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(registry.WINDOW, "alternate", _Alternate)
    scenario, flags, gamma, where = RUNS[run]
    data = scenario()
    data["policies"]["window"] = {"name": "alternate"}
    assert _sim(data, flags, tmp_path) == 1
    assert capsys.readouterr().err == UNDECLARED.format(gamma=gamma, where=where)


@dataclass(frozen=True, slots=True)
class _CountingStop:
    """Answers with integers instead of bools (test-only)."""

    def keep_mask(self, rows: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
        return np.ones(len(rows), dtype=np.int64)


def test_a_stop_policys_broken_answer_is_one_line_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(registry.STOP, "counting", _CountingStop)
    row = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 6,
           "drafter_id": 0, "acceptance_seq": [1, 1, 1, 0, 1, 1],
           "draft_features": features([0.9] * 6)}  # fmt: skip
    data = stop_scenario(tmp_path, [row])
    data["stop_predictor"]["policy"] = {"name": "counting"}
    assert _sim(data, [], tmp_path) == 1
    assert capsys.readouterr().err == (
        "edgespec sim: stop policy _CountingStop returned int64 of shape (6,) for 6 rows; "
        "expected one bool per row\n"
    )
