"""``edgespec reproduce`` (edgespec.reproduce.command): argument errors, and a folder that
holds an earlier reproduction."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.reproduce.command import run_folder


def test_unknown_paper_names_the_argument_and_the_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "nosuchpaper"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(
        "edgespec reproduce: error: argument PAPER: invalid choice: 'nosuchpaper' "
        "(choose from 'wisp', 'dsd', 'zhu', 'wisv', 'wisp-serving', 'wisp-estimator', "
        "'dsd-real-pair', 'wisv-real-pair', 'wisv-heldout')\n"
    )


def test_an_out_holding_an_earlier_reproduction_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, a second run wrote beside the first: a quick run's scenarios and plots mixed
    with a full run's."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "REPORT.md").write_text("earlier")
    (tmp_path / "scenarios" / "w1.yaml").write_text("earlier")
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["reproduce", "zhu", "--quick", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec reproduce: --out {tmp_path} already holds a run (REPORT.md, "
        "scenarios/w1.yaml); give another folder, or --overwrite to replace that run's files\n"
    )
    assert run_folder("zhu", tmp_path, overwrite=True) == tmp_path
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["notes.txt"]
