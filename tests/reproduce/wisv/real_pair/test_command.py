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


def test_workers_is_refused_before_the_pair_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One process owns the models: --workers 2 was accepted and ignored."""

    def no_load(plan: object) -> None:
        raise AssertionError("the pair loaded")

    monkeypatch.setattr(report, "load_real_pair", no_load)
    out = tmp_path / "run"
    argv = ["reproduce", "wisv-real-pair", "--quick", "--quiet", "--workers", "2"]
    assert main([*argv, "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        "edgespec reproduce wisv-real-pair: "
        "--workers 2: wisv-real-pair runs in one process (its models load "
        "once); leave --workers out\n"
    )
    assert not out.exists()
    out.mkdir()
    (out / "REPORT.md").write_text("Command: `edgespec reproduce wisv-real-pair`\n")
    argv = [*argv[:-1], "999", "--out", str(out), "--overwrite"]  # over the CPUs, too
    assert main(argv) == 2
    assert "--workers 999: wisv-real-pair runs in one process" in capsys.readouterr().err
    assert (out / "REPORT.md").is_file()  # refused before --overwrite removed anything


def test_heldout_takes_a_candidate_head(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--head`` is read before any model loads: a file that is no head is a clear error."""
    from edgespec.cli import main

    bad = tmp_path / "bad-head.json"
    bad.write_text("[1, 2]")
    code = main(["reproduce", "wisv-heldout", "--head", str(bad), "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert "edgespec reproduce wisv-heldout: --head:" in err and "is not a decision head" in err
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit):
        main(["reproduce", "wisv-heldout", "--help"])
    help_text = capsys.readouterr().out
    assert "--head HEAD" in help_text and "--prompts PROMPTS" in help_text
    assert "--lossy-prompts LOSSY_PROMPTS" in help_text
