"""Progress of a plain and a sharded ``edgespec sim`` goes to stderr, as lines when stderr is
no terminal (a log file, CI): the plain run's bar went to stdout, beside the table, and
both bars printed nothing at all without a terminal (a 6-minute run looked hung)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main


def test_a_plain_run_says_its_simulated_seconds_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sim", "duration_s=5", "--no-plots", "--out", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    assert "simulating" not in captured.out
    lines = [line for line in captured.err.splitlines() if line.startswith("simulating")]
    assert lines[0] == "simulating default (simulated s): 0/5 (0 s)"
    assert lines[-1].startswith("simulating default (simulated s): 5/5 (")


def test_a_sharded_run_says_its_shards_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sim", "bench-cells", "duration_s=2", "--shards", "2", "--no-plots"]
    assert main([*args, "--out", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    assert "shards (local):" not in captured.out
    lines = [line for line in captured.err.splitlines() if line.startswith("shards (local):")]
    assert lines and lines[-1].startswith("shards (local): 2/2 (")
