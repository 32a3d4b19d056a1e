"""`edgespec train awc` through the CLI: a ``--data`` that is not a folder is refused in one
line saying so (was ``<data>/labels.parquet: no such file``), and the printed report gives
its counts as integers (was ``"rows": 96.0``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("torch")

from edgespec.cli import main
from tests.learn.awc.test_folder import Runs, _awc_data, runs  # noqa: F401 (a fixture)


def test_a_missing_data_folder_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nosuch"
    weights = tmp_path / "w.json"
    assert main(["train", "awc", "--data", str(missing), "--out", str(weights)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: --data {missing}: no such folder (give an awc-data --out "
        "folder: make one with edgespec train awc-data)\n"
    )
    missing.write_text("")
    assert main(["train", "awc", "--data", str(missing), "--out", str(weights)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec train awc: --data {missing}: not a folder (give an awc-data --out folder)\n"
    )
    assert not weights.exists()


def test_the_printed_report_counts_rows_and_scenarios_as_integers(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    runs: Runs,  # noqa: F811
) -> None:
    runs.empty.clear()
    data = tmp_path / "d"
    assert _awc_data(data, "--scenarios", "5", "--duration-s", "1") == 0
    capsys.readouterr()
    weights = tmp_path / "w.json"
    assert main(["train", "awc", "--data", str(data), "--out", str(weights), "--epochs", "1"]) == 0
    printed = capsys.readouterr().out
    report = json.loads(printed)
    counts = {side: (found["rows"], found["scenarios"]) for side, found in report.items()}
    assert counts == {"train": (48, 4), "held_out": (12, 1)}  # 12 contexts per scenario
    assert '"rows": 48,' in printed and '"scenarios": 4,' in printed
    saved = json.loads(weights.read_text())["metadata"]["report"]["train"]
    assert (type(saved["rows"]), type(saved["scenarios"])) == (int, int)
