"""``edgespec sim --shards N`` when a shard's run fails (its checks passed, as a file
removed after them or a policy breaking its contract would): the one line names the shard
(``shard 2 of 2: ...``), the exit status is the unsharded run's, and the run folder goes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.errors import UserInputError
from edgespec.policies.contracts import PolicyContractError
from edgespec.sim import simulator
from tests.sim.test_shards import pinned


def failing_for(cells: tuple[int, ...], error: Exception) -> Callable[..., Any]:
    """:func:`~edgespec.sim.simulator.simulate`, raising ``error`` for the shard of ``cells``."""
    simulate = simulator.simulate

    def run(scenario: Any, *, cells: Sequence[int] | None = None, **kwargs: Any) -> Any:
        if cells is not None and tuple(cells) == failing:
            raise error
        return simulate(scenario, cells=cells, **kwargs)

    failing = cells
    return run


CASES = [
    (
        UserInputError("trace file t.jsonl: line 3: not JSON"),
        2,
        "edgespec sim: shard 2 of 2: trace file t.jsonl: line 3: not JSON\n",
    ),
    (
        ConfigError("stop_predictor.policy.params.file", "stop predictor file sb.json is gone"),
        2,
        "edgespec sim: config field 'stop_predictor.policy.params.file': shard 2 of 2: "
        "stop predictor file sb.json is gone\n",
    ),
    (
        PolicyContractError("Greedy planned entry 7, which is not waiting"),
        1,
        "edgespec sim: shard 2 of 2: Greedy planned entry 7, which is not waiting\n",
    ),
]


@pytest.mark.parametrize(("error", "status", "line"), CASES)
def test_a_shard_that_fails_is_named_in_the_one_line(
    error: Exception,
    status: int,
    line: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "pinned.yaml"
    path.write_text(yaml.safe_dump(pinned(duration_s=3.0)))
    monkeypatch.setattr(simulator, "simulate", failing_for((1, 2), error))
    out = tmp_path / "run"
    args = ["sim", str(path), "--shards", "2", "--workers", "1", "--quiet", "--out", str(out)]
    assert main([*args, "--no-plots"]) == status
    assert capsys.readouterr().err == line
    assert not out.exists()
