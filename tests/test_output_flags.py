"""Every ``edgespec`` flag that names a path to write, found by walking the parser: an
output file or folder that cannot be written is a usage error naming the flag when the
flags are parsed (:func:`edgespec.output_paths.output_file`,
:func:`~edgespec.output_paths.writable_output_folder`), before any work, and the check
leaves nothing behind; ``edgespec sim``'s run folder, the one
:func:`~edgespec.output_paths.output_folder`, is checked as it is made, before any run."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.output_paths import output_file, output_folder, writable_output_folder


def _written_flags(parser: argparse.ArgumentParser) -> list[tuple[str, str, object]]:
    """(parser's prog, flag, value type) of every flag whose value is a path written: an
    output file or folder."""
    kinds = (output_file, writable_output_folder, output_folder)
    found: list[tuple[str, str, object]] = [
        (parser.prog, action.option_strings[-1], action.type)
        for action in parser._actions
        if action.type in kinds
    ]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _written_flags(sub)
    return found


MADE_BEFORE_WORK = {("edgespec sim", "--out")}
"""The flags of type ``output_folder`` (checked as a path only): ``edgespec sim`` makes and
checks its run folder before its first run, in its own words
(tests/sim/commands/test_run_folder_made.py). Every other output folder is
``writable_output_folder``."""


def test_every_written_path_is_tried_when_the_flags_are_parsed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``trace --out /proc/t.jsonl`` captured every request, ``train stop-predictor --out
    /proc/x.json`` ran its whole study, ``train draft``, ``calibrate``, ``reproduce``,
    ``train awc-data --out`` and ``train wisv --out-dir`` their whole work, then each
    failed naming a hidden temporary file or the folder; ``reproduce wisp-estimator
    --save-samples`` was not walked at all (a plain path, written after the check)."""
    import errno
    import tempfile

    from edgespec.cli import build_parser

    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr("edgespec.output_paths.tempfile.TemporaryFile", read_only)
    flags = _written_flags(build_parser())
    assert {(prog, flag) for prog, flag, kind in flags if kind is output_folder} == (
        MADE_BEFORE_WORK
    )  # checked first: the old types would run these commands' work below
    folders = {(prog, flag) for prog, flag, kind in flags if kind is writable_output_folder}
    for named in ("train draft", "calibrate", "reproduce wisp", "train awc-data", "data lengths"):
        assert (f"edgespec {named}", "--out") in folders, named
    assert ("edgespec train wisv", "--out-dir") in folders and len(folders) >= 15
    assert ("edgespec train stop-predictor", "--out") in [f[:2] for f in flags]
    assert ("edgespec reproduce wisp-estimator", "--save-samples") in [f[:2] for f in flags]
    assert len(flags) >= 35
    for prog, flag, kind in flags:
        if kind is output_folder:
            continue
        new = tmp_path / "new"  # not made yet: its nearest existing parent is tried
        tried = [new / "x.json"] if kind is output_file else [new, tmp_path]
        for given in map(str, tried):
            with pytest.raises(SystemExit) as stop:
                main([*prog.split()[1:], flag, given])
            assert stop.value.code == 2, prog
            assert capsys.readouterr().err.splitlines()[-1] == (
                f"{prog}: error: argument {flag}: {given}: cannot write in {tmp_path}: "
                "Read-only file system"
            )
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(argparse.ArgumentTypeError) as info:
        output_file("x.json")
    assert str(info.value) == "x.json: cannot write in .: Read-only file system"
    monkeypatch.setattr("edgespec.output_paths.tempfile.TemporaryFile", tempfile.TemporaryFile)


def test_the_sim_run_folder_is_checked_when_it_is_made_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one ``output_folder`` flag (:data:`MADE_BEFORE_WORK`): refused before any run,
    in the simulator's words, and the folders it made are removed again."""
    import errno

    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("a run started")

    monkeypatch.setattr("edgespec.output_paths.tempfile.TemporaryFile", read_only)
    monkeypatch.setattr("edgespec.sim.simulator.simulate", never)
    for prog, flag in sorted(MADE_BEFORE_WORK):
        given = tmp_path / "new" / "run"
        assert main([*prog.split()[1:], flag, str(given), "--quiet", "--no-plots"]) == 2
        assert capsys.readouterr().err == (
            f"{prog}: cannot write in the run folder {given}: Read-only file system\n"
        )
    assert list(tmp_path.iterdir()) == []
