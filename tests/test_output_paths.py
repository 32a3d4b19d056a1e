"""edgespec.output_paths: an output folder or file that cannot be written is a usage error
naming the flag, before any work; other path errors are one line from the CLI."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import BinaryIO

import pytest

from edgespec.cli import main
from edgespec.output_paths import (
    output_file,
    output_folder,
    temporary_of,
    temporary_path,
    writable_output_folder,
)


def test_a_folder_may_exist_or_not_and_a_file_may_be_replaced(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text("{}")
    assert output_folder(str(tmp_path)) == tmp_path
    assert output_folder(str(tmp_path / "new" / "deeper")) == tmp_path / "new" / "deeper"
    assert output_file(str(tmp_path / "old.json")) == tmp_path / "old.json"
    assert output_file(str(tmp_path / "new" / "x.json")) == tmp_path / "new" / "x.json"
    assert writable_output_folder(str(tmp_path / "new")) == tmp_path / "new"
    # nothing is made while parsing, and the write checks leave nothing behind
    assert [p.name for p in tmp_path.iterdir()] == ["old.json"]


def test_a_name_over_the_file_systems_limit_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 300-byte name: looking it up raised ENAMETOOLONG from inside the check, a traceback."""
    from edgespec.cli import main

    long = tmp_path / ("x" * 300)
    for check in (output_folder, output_file):
        with pytest.raises(argparse.ArgumentTypeError) as info:
            check(str(long / "y"))
        assert str(info.value) == f"{long / 'y'}: File name too long"
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        main(["sim", "--out", str(long), "--quiet"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.endswith(f"argument --out: {long}: File name too long\n") and "Traceback" not in err


def test_a_file_where_a_folder_goes_and_a_folder_where_a_file_goes_are_refused(
    tmp_path: Path,
) -> None:
    file = tmp_path / "a-file"
    file.write_text("")
    with pytest.raises(argparse.ArgumentTypeError, match=r"a-file is a file, not a folder$"):
        output_folder(str(file))
    with pytest.raises(argparse.ArgumentTypeError, match=r"is a folder; give a file name$"):
        output_file(str(tmp_path))
    for empty in ("", " "):  # was " is a folder; give a file name" (Path("") is ".")
        with pytest.raises(argparse.ArgumentTypeError, match=r"^must not be empty: give a file"):
            output_file(empty)
    for check in (output_folder, output_file):
        with pytest.raises(argparse.ArgumentTypeError, match=rf": {file} is a file, not a folder$"):
            check(str(file / "below" / "x.json"))


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["sim", "--quiet", "--out", "{file}"], "--out"),
        (["trace", "--draft", "ngram", "--out", "{dir}"], "--out"),
        (["reproduce", "zhu", "--quick", "--out", "{file}"], "--out"),
        (["train", "stop-predictor", "--out", "{dir}"], "--out"),
        (["profile", "--target", "gemma3-270m", "--out", "{dir}"], "--out"),
        (["calibrate", "--out", "{file}"], "--out"),
        (["draft", "--prompt-ids", "1", "--records", "{dir}"], "--records"),
        (["bench", "serve", "--json", "{file}/x.json"], "--json"),
    ],
)
def test_commands_refuse_an_unwritable_output_as_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    file = tmp_path / "a-file"
    file.write_text("")
    given = [a.format(file=file, dir=tmp_path) for a in argv]
    with pytest.raises(SystemExit) as stop:
        main(given)
    assert stop.value.code == 2
    assert f"argument {flag}: " in capsys.readouterr().err


def test_another_path_error_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(tmp_path / "metrics.json"))

    monkeypatch.setattr(Path, "mkdir", refuse)
    assert main(["sim", "--quiet", "--no-plots", "duration_s=1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"edgespec sim: {tmp_path / 'metrics.json'}: Permission denied\n"


def test_claim_folder_refuses_an_earlier_runs_files_or_removes_exactly_them(
    tmp_path: Path,
) -> None:
    from edgespec.errors import UserInputError
    from edgespec.output_paths import claim_folder

    files = ("REPORT.md", "scenarios/*.yaml", "fig*.png")
    default = tmp_path / "runs" / "x"
    assert claim_folder(tmp_path / "new", default, files, False) == tmp_path / "new"
    (tmp_path / "scenarios").mkdir()
    for name in ("REPORT.md", "scenarios/a.yaml", "scenarios/keep.txt", "fig1.png", "mine.png",
                 "input.yaml"):  # fmt: skip
        (tmp_path / name).write_text(name)
    with pytest.raises(UserInputError) as refused:
        claim_folder(tmp_path, default, files, False)
    assert str(refused.value) == (
        f"--out {tmp_path} already holds a run (REPORT.md, fig1.png, scenarios/a.yaml); give "
        "another folder, or --overwrite to replace that run's files"
    )
    assert claim_folder(tmp_path, default, files, True) == tmp_path
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["input.yaml", "mine.png", "scenarios/keep.txt"]


def test_claim_folder_keeps_inputs_names_at_most_eight_and_numbers_defaults(
    tmp_path: Path,
) -> None:
    from edgespec.errors import UserInputError
    from edgespec.output_paths import claim_folder

    for i in range(10):
        (tmp_path / f"t{i}.jsonl").write_text("")
    with pytest.raises(UserInputError, match=r"\(t0\.jsonl, .*, t7\.jsonl and 2 more\)"):
        claim_folder(tmp_path, tmp_path, ("*.jsonl",), False)
    kept = [tmp_path / "t3.jsonl"]
    claim_folder(tmp_path, tmp_path, ("*.jsonl",), True, keep=kept)
    assert [p.name for p in tmp_path.iterdir()] == ["t3.jsonl"]
    assert claim_folder(tmp_path, tmp_path, ("*.jsonl",), False, keep=kept) == tmp_path
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a-2").mkdir()
    assert claim_folder(None, tmp_path / "runs" / "a", (), False) == tmp_path / "runs" / "a-3"
    assert (tmp_path / "runs" / "a-3").is_dir()  # made when claimed (reserve_folder)


def test_claim_folder_refuses_a_path_the_run_cannot_write_whatever_overwrite_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder where the run writes a file failed only when the run wrote it, at its end,
    naming the temporary file (``.fig1.png.123.tmp: Is a directory``)."""
    import edgespec.output_paths as output_paths
    from edgespec.errors import UserInputError
    from edgespec.output_paths import claim_folder

    files = ("REPORT.md", "scenarios/*.yaml", "fig*.png")
    default = tmp_path / "runs" / "x"
    (tmp_path / "fig1.png").mkdir()
    for overwrite in (False, True):
        with pytest.raises(UserInputError) as refused:
            claim_folder(tmp_path, default, files, overwrite)
        assert str(refused.value) == (
            f"--out {tmp_path}: {tmp_path / 'fig1.png'} is a folder where this run writes a "
            "file; move it or give another folder"
        )
    (tmp_path / "fig1.png").rmdir()
    (tmp_path / "scenarios").write_text("mine")
    with pytest.raises(UserInputError) as refused:
        claim_folder(tmp_path, default, files, True)
    assert str(refused.value) == (
        f"--out {tmp_path}: {tmp_path / 'scenarios'} is a file where this run makes a folder; "
        "move it or give another folder"
    )
    (tmp_path / "scenarios").unlink()
    (tmp_path / "scenarios").mkdir()

    def read_only(folder: Path) -> None:
        if folder == tmp_path / "scenarios":
            raise PermissionError(13, "Permission denied", str(folder))

    monkeypatch.setattr(output_paths, "check_writable", read_only)
    with pytest.raises(UserInputError) as refused:
        claim_folder(tmp_path, default, files, False)
    assert str(refused.value) == (
        f"--out {tmp_path}: cannot write in {tmp_path / 'scenarios'}: Permission denied"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["scenarios"]  # nothing touched


def test_claim_folder_replaces_a_recorded_runs_files_and_removes_the_folders_it_empties(
    tmp_path: Path,
) -> None:
    """--overwrite left the subfolders it emptied behind; ``recorded`` (another run's files,
    which the folder records) is refused and removed like the run's own."""
    from edgespec.errors import UserInputError
    from edgespec.output_paths import claim_folder

    for name in ("scenarios", "profiles", "plots"):
        (tmp_path / name).mkdir()
    for name in ("REPORT.md", "scenarios/a.yaml", "profiles/p.yaml", "profiles/mine.yaml",
                 "plots/fig.png"):  # fmt: skip
        (tmp_path / name).write_text(name)
    files, recorded = ("REPORT.md", "scenarios/*.yaml"), ("profiles/p.yaml",)
    with pytest.raises(
        UserInputError, match=r"\(REPORT\.md, profiles/p\.yaml, scenarios/a\.yaml\)"
    ):
        claim_folder(tmp_path, tmp_path, files, False, recorded=recorded)
    assert claim_folder(tmp_path, tmp_path, files, True, recorded=recorded) == tmp_path
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert left == ["plots", "plots/fig.png", "profiles", "profiles/mine.yaml"]


def test_write_atomically_replaces_the_file_whole_or_leaves_it_as_it_was(tmp_path: Path) -> None:
    from edgespec.output_paths import write_atomically, write_text_atomically

    path = tmp_path / "out.json"
    write_text_atomically(path, "first ✓\n")
    assert path.read_text(encoding="utf-8") == "first ✓\n"

    def cut_off(fh: BinaryIO) -> None:
        fh.write(b"half of the sec")
        raise KeyboardInterrupt  # stopped part-way, as by Ctrl-C

    with pytest.raises(KeyboardInterrupt):
        write_atomically(path, cut_off)
    assert path.read_text(encoding="utf-8") == "first ✓\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left
    write_atomically(path, lambda fh: fh.write(b"second\n"))
    assert path.read_bytes() == b"second\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def _with_overwrite(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> set[str]:
    """Every ``edgespec`` command line (``sim``, ``reproduce zhu`` ...) under ``parser``
    that takes ``--overwrite``."""
    found = {" ".join(words)} if "--overwrite" in parser._option_string_actions else set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= _with_overwrite(sub, (*words, name))
    return found


def _work(command: list[str]) -> str:
    """The function that starts ``command``'s work, after its folder is claimed."""
    from edgespec.reproduce.command import PAPERS

    if command[1:] == ["wisv-heldout"]:  # claims its folder itself, then runs
        return "edgespec.reproduce.wisv.real_pair.heldout.run"
    if command[0] == "reproduce":
        return f"{PAPERS[command[1]].claims}.reproduce"
    return {"calibrate": "edgespec.calibration.command._pair",
            "sim": "edgespec.sim.commands.run._run_plain"}[command[0]]  # fmt: skip


OVERWRITING = [["reproduce", name] for name in ("wisp", "dsd", "zhu", "wisv", "wisv-real-pair",
                                                "wisv-heldout")]  # fmt: skip
OVERWRITING += [["calibrate"], ["sim"]]
FILE_OUT = {"profile", "trace"}
"""Commands whose ``--out`` is one file: profile's with a fixed default, which ``--overwrite``
may replace without ``--out`` (tests/profiling/test_profile_out.py); trace's with none
(tests/learn/traces/test_trace_outputs.py)."""
TRAIN_OUT = {
    f"train {name}" for name in ("draft", "feature-draft", "stop-predictor", "awc", "wisv")
}
"""``train`` commands whose output flag is required (no default folder to claim): their
refusal of an earlier artifact and ``--overwrite`` are tested in
tests/learn/test_train_overwrite.py and tests/learn/drafts/test_overwrite.py."""


def test_every_command_with_overwrite_is_checked_below() -> None:
    from edgespec.cli import build_parser

    expected = {" ".join(c) for c in OVERWRITING} | FILE_OUT | TRAIN_OUT
    assert _with_overwrite(build_parser()) == expected


@pytest.mark.parametrize("command", OVERWRITING, ids=" ".join)
def test_overwrite_without_out_is_refused_before_anything_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
) -> None:
    """reproduce and calibrate took it and ran the whole run into a new folder."""
    import time

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the run started")

    monkeypatch.setattr(_work(command), never)
    monkeypatch.chdir(tmp_path)
    started = time.perf_counter()
    assert main([*command, "--overwrite"]) == 2
    assert time.perf_counter() - started < 5
    said = "--overwrite needs --out (a new runs/<name>-<time> holds no run)"
    assert capsys.readouterr() == ("", f"edgespec {' '.join(command)}: {said}\n")
    assert list(tmp_path.iterdir()) == []


def test_a_temporary_names_its_file_and_writer_and_nothing_else_does() -> None:
    made = temporary_path(Path("/x/shard_00012.pt"))
    assert temporary_of(made) == ("shard_00012.pt", os.getpid())
    assert temporary_of(Path(".x.y.12.tmp")) == ("x.y", 12)
    for name in (".a.tmp", "shard_00012.tmp", ".a.12x.tmp", "a.1.tmp", "..1.tmp", ".a.1.txt"):
        assert temporary_of(Path(name)) is None, name
