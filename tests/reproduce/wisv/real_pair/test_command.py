"""``edgespec reproduce wisv-real-pair``: registered beside the papers, its arguments'
errors, and a quick run through the command line on the tiny pair."""

from __future__ import annotations

from pathlib import Path

import pytest

import edgespec.reproduce.wisv.real_pair.report as report
from edgespec.cli import main
from edgespec.reproduce.command import PAPERS
from tests.reproduce.wisv.real_pair.tiny import tiny_loader


def test_registered_as_a_reproduction() -> None:
    assert PAPERS["wisv-real-pair"].claims == report.__name__


def test_help_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "--help"])
    assert exit_info.value.code == 0
    assert "wisv-real-pair" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rounds", "3"], "unrecognized arguments: --rounds 3"),
        (["--workers", "0"], "argument --workers: must be >= 1, got 0"),
        (["--quick", "extra"], "unrecognized arguments: extra"),
    ],
)
def test_argument_errors_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "wisv-real-pair", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "edgespec reproduce wisv-real-pair: error:" in err and message in err


def test_quick_run_through_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(report, "load_real_pair", tiny_loader)
    out = tmp_path / "run"
    assert main(["reproduce", "wisv-real-pair", "--quick", "--quiet", "--out", str(out)]) == 0
    assert (out / "results.json").is_file()
    text = (out / "REPORT.md").read_text()
    assert text.startswith("# WISV (seed 003) on the real pair: V5 and V6 — quick")
    assert "Command: `edgespec reproduce" in text
    assert f"report: {out / 'REPORT.md'}" in capsys.readouterr().out
