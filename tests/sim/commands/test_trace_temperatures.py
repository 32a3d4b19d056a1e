"""A replayed trace captured at another temperature than the scenario's is said once on
stderr before the run (edgespec.sim.commands.checks.trace_temperature_warnings): its rounds
accept as the capture's did, greedy or sampled (``edgespec trace --temperature``); the
scenario's temperature alone changed the bytes on the wire, silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.sim.commands.checks import trace_temperature_warnings
from edgespec.sim.setup.scenario import scenario_from_dict
from tests.sim.helpers import tiny_scenario

QUIET = ["--quiet", "--no-plots"]
ADVICE = "its rounds accept as the capture's did (edgespec trace --temperature {} captures at "


def _trace(path: Path, temperature: float | None, with_seq: bool = True) -> Path:
    rows: list[dict[str, Any]] = [
        {"request_id": f"r{i}", "arrival_ms": 10.0 * i, "prompt_tokens": 20, "output_tokens": 4}
        for i in range(3)
    ]
    for row in rows:
        if with_seq:
            row["acceptance_seq"] = [1, 0, 1, 1]
        if temperature is not None:
            row["temperature"] = temperature
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _warnings(**sections: Any) -> list[str]:
    return trace_temperature_warnings(scenario_from_dict(tiny_scenario(**sections)))


def test_a_pool_trace_of_another_temperature_is_named_with_both(tmp_path: Path) -> None:
    greedy, sampled = _trace(tmp_path / "g.jsonl", None), _trace(tmp_path / "s.jsonl", 0.8)
    acceptance = {"kind": "trace", "traces": [str(greedy), str(sampled)]}
    assert _warnings(acceptance=acceptance, temperature=0.8) == [
        f"warning: acceptance.traces[0] ({greedy}): captured greedy, replayed at temperature "
        f"0.8: {ADVICE.format('0.8')}the scenario's)"
    ]
    assert _warnings(acceptance=acceptance) == [
        f"warning: acceptance.traces[1] ({sampled}): captured at temperature 0.8, replayed "
        f"greedy: {ADVICE.format('0')}the scenario's)"
    ]
    assert _warnings(acceptance={"kind": "iid", "alpha": 0.5}, temperature=0.8) == []


def test_the_bundled_traces_are_one_line_and_only_when_a_request_draws_from_them(
    tmp_path: Path,
) -> None:
    bundled = "warning: the bundled acceptance traces (edgespec/data/traces/): captured greedy"
    [line] = _warnings(acceptance={"kind": "trace"}, temperature=0.5)
    assert line.startswith(f"{bundled}, replayed at temperature 0.5: ")
    assert _warnings(acceptance={"kind": "trace"}) == []  # greedy: they are greedy captures
    own = _trace(tmp_path / "own.jsonl", 0.5)  # every request replays its own sequence
    workload = {"kind": "trace", "trace": str(own)}
    assert _warnings(acceptance={"kind": "trace"}, workload=workload, temperature=0.5) == []
    assert _warnings(acceptance={"kind": "trace"}, workload=workload) == [
        f"warning: workload.trace ({own}): captured at temperature 0.5, replayed greedy: "
        f"{ADVICE.format('0')}the scenario's)"
    ]
    none = _trace(tmp_path / "none.jsonl", None, with_seq=False)  # they draw from the pool
    workload = {"kind": "trace", "trace": str(none)}
    [line] = _warnings(acceptance={"kind": "trace"}, workload=workload, temperature=0.5)
    assert line.startswith(bundled)


def test_edgespec_sim_says_it_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sampled = _trace(tmp_path / "s.jsonl", 0.8)
    data = tiny_scenario(duration_s=2.0, acceptance={"kind": "trace", "traces": [str(sampled)]})
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    assert main(["sim", str(tmp_path / "s.yaml"), *QUIET, "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert err.startswith(
        f"edgespec sim: warning: acceptance.traces[0] ({sampled}): captured at temperature "
        "0.8, replayed greedy: "
    )
    again = ["--out", str(tmp_path / "again")]
    assert main(["sim", str(tmp_path / "s.yaml"), "temperature=0.8", *QUIET, *again]) == 0
    assert "warning" not in capsys.readouterr().err
