"""``edgespec sim`` and ``edgespec bench --json`` write their files whole or not at all: a
disk that fills while one is written leaves no file under its name (or the old one) and
no temporary file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from tests.disk_full import NEEDS_PROC_FD, disk_full_writing
from tests.sim.helpers import tiny_scenario

pytestmark = NEEDS_PROC_FD


def test_a_run_folder_file_that_fails_midway_is_not_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=2.0)))
    out = tmp_path / "run"
    disk_full_writing(monkeypatch, "scenario.yaml")
    assert main(["sim", str(path), "--quiet", "--no-plots", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: {out / 'scenario.yaml'}: No space left on device\n"
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "batches.parquet",
        "metrics.json",
        "requests.csv",
        "requests.parquet",
    ]


def test_a_bench_json_that_fails_midway_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"policy": "fcfs", "queue_depth": 10, "us_per_decision": 1.5}]
    monkeypatch.setattr("edgespec.sim.policy_bench.bench_policies", lambda repeat: rows)
    out = tmp_path / "policy.json"
    out.write_text("old\n")
    disk_full_writing(monkeypatch, "policy.json")
    assert main(["bench", "policy", "--json", str(out)]) == 2
    assert capsys.readouterr().err == f"edgespec bench policy: {out}: No space left on device\n"
    assert [p.name for p in tmp_path.iterdir()] == ["policy.json"]
    assert out.read_text() == "old\n"


def test_a_disk_that_fills_while_records_stream_is_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def full(self: object, record: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("edgespec.metrics.record_files.RecordFiles.batch", full)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=2.0)))
    out = tmp_path / "run"
    assert main(["sim", str(path), "--quiet", "--no-plots", "--out", str(out)]) == 1
    assert capsys.readouterr().err == "edgespec sim: No space left on device (errno 28)\n"
