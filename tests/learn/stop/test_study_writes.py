"""`edgespec train stop-predictor` writes the predictor and its report whole or not at all
(each through :func:`edgespec.output_paths.write_text_atomically`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec import output_paths
from edgespec.cli import main
from edgespec.learn.stop import command
from edgespec.learn.traces.records import write_trace
from tests.learn.stop.test_study import synthetic_records


def test_predictor_and_report_are_written_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[Path] = []
    whole = output_paths.write_text_atomically

    def spy(path: Path, text: str) -> None:
        written.append(path)
        whole(path, text)

    monkeypatch.setattr(command, "write_text_atomically", spy)
    write_trace(tmp_path / "traces" / "synthetic.jsonl", synthetic_records(30, 2))
    out, report = tmp_path / "stop.json", tmp_path / "report"
    args = ["train", "stop-predictor", "--traces", str(tmp_path / "traces"), "--out", str(out),
            "--report-dir", str(report), "--mlp-trials", "1", "--tree-trials", "1",
            "--latency-calls", "5"]  # fmt: skip
    assert main(args) == 0
    assert written == [out, report / "study.json", report / "REPORT.md"]
    assert sorted(p.name for p in report.iterdir()) == ["REPORT.md", "study.json"]
