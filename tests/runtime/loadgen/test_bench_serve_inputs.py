"""``edgespec bench serve``'s ``--log-dir`` and ``--prompts`` checked before any server
starts: a log folder that is a file or cannot be written, and a prompt set of no known
name, are usage errors naming the flag as the flags are parsed; a known set that cannot be
read is one line before the server is built (each was found only after the server, and
its model, had started, in words that named neither flag nor every set)."""

from __future__ import annotations

import errno
import json
import time
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.errors import UserInputError

SHORT = ["--clients", "1", "--procs", "1", "--duration-s", "1", "--max-new-tokens", "2",
         "--synthetic-layers", "2", "--synthetic-hidden", "64"]  # fmt: skip
"""A small load that ends at once, had the old code started it."""


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The last stderr line of ``edgespec bench serve ARGV`` refused as the flags are
    parsed (exit 2, within 5 s: no server built)."""
    t0 = time.monotonic()
    with pytest.raises(SystemExit) as stop:
        main(["bench", "serve", *argv, *SHORT])
    assert stop.value.code == 2 and time.monotonic() - t0 < 5
    return capsys.readouterr().err.splitlines()[-1]


def test_a_log_dir_that_is_a_file_is_refused_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An existing file was ``edgespec bench: bs.json: File exists`` once the server was
    built; a file where a parent folder would be, a ``Not a directory``."""
    taken = tmp_path / "bs.json"
    taken.write_text("{}")
    assert _usage_error(["--log-dir", str(taken)], capsys) == (
        f"edgespec bench serve: error: argument --log-dir: {taken} is a file, not a folder"
    )
    below = taken / "logs"
    assert _usage_error(["--log-dir", str(below)], capsys) == (
        f"edgespec bench serve: error: argument --log-dir: {below}: {taken} is a file, not a folder"
    )


def test_a_log_dir_that_cannot_be_written_is_refused_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/sys/kernel/zz`` was ``edgespec bench: Operation not permitted`` after the server
    was built: the folder (or its nearest existing parent) must take a file now."""

    def refused(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr("edgespec.output_paths.tempfile.TemporaryFile", refused)
    given = tmp_path / "zz"
    assert _usage_error(["--log-dir", str(given)], capsys) == (
        f"edgespec bench serve: error: argument --log-dir: {given}: cannot write in {tmp_path}: "
        "Operation not permitted"
    )
    assert not given.exists()


def test_an_unknown_prompt_set_is_refused_listing_every_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It was refused after the server started, listing every set but ``general``, the
    default."""
    assert _usage_error(["--prompts", "nosuch"], capsys) == (
        "edgespec bench serve: error: argument --prompts: invalid choice: 'nosuch' (choose "
        "from 'gsm8k', 'cnndm', 'humaneval', 'sharegpt', 'general')"
    )
    with pytest.raises(SystemExit):
        main(["bench", "serve", "--help"])
    assert "--prompts SET" in capsys.readouterr().out


def test_a_prompt_set_that_cannot_be_read_is_refused_before_the_server_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDGESPEC_PROMPTS", str(tmp_path / "none"))
    t0 = time.monotonic()
    assert main(["bench", "serve", "--prompts", "gsm8k", *SHORT]) == 2
    assert time.monotonic() - t0 < 5
    missing = tmp_path / "none" / "gsm8k_test.jsonl"
    assert capsys.readouterr().err == (  # no "starting edgespec serve" line before it
        f"edgespec bench serve: --prompts gsm8k: prompt file '{missing}' does not exist\n"
    )


def test_the_loader_names_every_set_it_takes() -> None:
    """``general`` was left out of the names an unknown set is told."""
    from edgespec.datasets.prompts import load_prompts

    known = "known datasets are gsm8k, cnndm, humaneval, sharegpt, general"
    with pytest.raises(ValueError) as unknown:
        load_prompts("nosuch", "test")
    assert str(unknown.value) == f"unknown dataset 'nosuch': {known}"
    from edgespec.runtime.loadgen.prompts import prompt_texts

    with pytest.raises(UserInputError) as refused:
        prompt_texts("nosuch")
    assert str(refused.value) == f"--prompts nosuch: unknown dataset 'nosuch': {known}"
    assert len(prompt_texts("general")) == 16


def test_json_into_a_folder_not_made_yet_is_written(tmp_path: Path) -> None:
    """``--json`` into new folders: they are made when the report is written (it was
    ``[Errno 2] No such file or directory: '.../.x.json.PID.tmp'`` after the whole run)."""
    from edgespec.cli import build_parser
    from edgespec.runtime.commands.bench_serve import _report
    from edgespec.runtime.loadgen.outcome import RunOutcome
    from edgespec.runtime.loadgen.report import LoadReport, run_metrics

    out = tmp_path / "new" / "deeper" / "x.json"
    args = build_parser().parse_args(["bench", "serve", "--json", str(out)])
    outcome = RunOutcome(0.0, 1.0, 1.0, 0, (), (), (), (), (), (), "0a1b2c3d")
    report = LoadReport({"mode": "distributed"}, outcome, run_metrics(outcome), None, 0, None, "")
    assert _report(args, ("distributed",), (report,)) == 0
    assert json.loads(out.read_text())["runs"][0]["run_tag"] == "0a1b2c3d"


def test_the_help_says_what_the_drain_and_the_shares_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--slo-mix`` shares that do not sum to 1 are rescaled, and the help says so."""
    with pytest.raises(SystemExit):
        main(["bench", "serve", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "NAME:TOKENS_PER_S:SHARE,..., the shares rescaled to sum to 1 (default" in shown
    assert "then the requests in flight get this long; one still running is lost" in shown
