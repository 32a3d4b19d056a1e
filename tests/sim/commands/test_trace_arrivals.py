"""A trace workload's requests after ``duration_s`` are not simulated
(edgespec.sim.setup.sources): a trace whose every request arrives after it (times written
in another unit than milliseconds) is refused naming the trace, its first arrival,
``duration_s`` and the unit, where it ran a table of 0 requests with exit 0; a trace some
of whose requests arrive after it runs, saying on stderr how many are left out: a plain
run, and a sweep or a capacity search once per trace and duration (they said nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.sim.setup.sources import num_arrivals_after
from edgespec.sim.setup.workload import TraceEntry
from tests.sim.helpers import sim_refusal

QUIET = ["--quiet", "--no-plots"]


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich wraps at the terminal width; a wide one keeps each summary on one line."""
    monkeypatch.setenv("COLUMNS", "500")


def _scenario(tmp_path: Path, arrivals_ms: list[float]) -> Path:
    """A 2-second scenario whose workload is a trace of requests at ``arrivals_ms``."""
    rows = [
        {"request_id": f"r{i}", "arrival_ms": ms, "prompt_tokens": 20, "output_tokens": 8}
        for i, ms in enumerate(arrivals_ms)
    ]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    data = {
        "name": "late",
        "duration_s": 2.0,
        "acceptance": {"kind": "iid", "alpha": 0.7},
        "workload": {"kind": "trace", "trace": "t.jsonl"},
    }
    file = tmp_path / "late.yaml"
    file.write_text(yaml.safe_dump(data, sort_keys=False))
    return file


def test_a_trace_with_every_request_after_duration_s_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _scenario(tmp_path, [120_000.0, 121_500.0])  # 2 minutes in: past a 2 s run
    assert sim_refusal([str(file)], tmp_path, capsys) == (
        f"edgespec sim: {file}:8: config field 'workload.trace': {tmp_path / 't.jsonl'}: every "
        "request arrives after duration_s (2 s), the first at 120,000 ms (120 s); a trace's "
        "arrival_ms / arrivaltime_ms / arrival_time_ms is in milliseconds\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_trace_with_some_requests_after_duration_s_says_how_many_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _scenario(tmp_path, [0.0, 500.0, 2000.0, 2000.5, 9000.0])
    assert main(["sim", str(file), *QUIET, "--out", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    assert captured.err == f"edgespec sim: {_late(tmp_path, 2, 2)}\n"
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["num_requests"] == 2  # the one at 2 s arrives, and does not finish by then


def _late(tmp_path: Path, num: int, duration_s: float) -> str:
    return (
        f"warning: {tmp_path / 't.jsonl'}: {num} trace requests arrive after duration_s "
        f"({duration_s:g} s) and are not simulated"
    )


def test_a_sweep_says_each_traces_late_requests_once_per_duration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sweep said nothing (a plain run alone did): its points at 2 s say it once for
    both seeds, its points at 1 s once with their own count, those at 9.5 s nothing."""
    file = _scenario(tmp_path, [0.0, 500.0, 2000.0, 2000.5, 9000.0])
    sweep = ["--sweep", "seed=0,1", "duration_s=2,1,9.5"]
    assert main(["sim", str(file), *QUIET, *sweep, "--out", str(tmp_path / "s")]) == 0
    assert capsys.readouterr().err == (
        f"edgespec sim: {_late(tmp_path, 2, 2)}\nedgespec sim: {_late(tmp_path, 3, 1)}\n"
    )


def test_a_sweep_says_its_traces_late_requests_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its points change the devices only: the same requests arrive late at every one (a
    capacity search of a trace workload is refused: the trace fixes the load)."""
    file = _scenario(tmp_path, [0.0, 500.0, 2000.0, 2000.5, 9000.0])
    data = yaml.safe_load(file.read_text())
    data["slo_classes"] = {"default": 1.0}
    data["auto_topology"] = {
        "devices": [{"count": 2, "draft_model": "qwen3-0.6b", "hardware": "jetson-orin"}],
        "servers": [{"count": 1, "target_model": "qwen3-8b", "hardware": "a40"}],
    }
    file.write_text(yaml.safe_dump(data, sort_keys=False))
    sweep = ["--sweep", "auto_topology.devices.0.count=2,3,4"]
    assert main(["sim", str(file), *QUIET, *sweep, "--out", str(tmp_path / "c")]) == 0
    assert capsys.readouterr().err == f"edgespec sim: {_late(tmp_path, 2, 2)}\n"


def test_a_trace_within_duration_s_runs_without_a_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _scenario(tmp_path, [0.0, 500.0, 2000.0])  # at duration_s: simulated
    assert main(["sim", str(file), *QUIET, "--out", str(tmp_path / "run")]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("arrivals_s", "num_after"), [((), 0), ((0.0, 2.0), 0), ((0.0, 2.0, 2.001), 1), ((3.0,), 1)]
)
def test_arrivals_after_duration_s_are_those_strictly_later(
    arrivals_s: tuple[float, ...], num_after: int
) -> None:
    trace = [TraceEntry(f"r{i}", t, 1, 1, "0") for i, t in enumerate(arrivals_s)]
    assert num_arrivals_after(trace, 2.0) == num_after
