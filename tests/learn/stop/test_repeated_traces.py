"""``edgespec train stop-predictor`` refuses a trace file given twice: as the same
``--traces`` again, through a directory, or as a byte-identical copy (was: taken, its
requests counted twice, so a held-out request could also be a training request). The
refusal comes before any training and writes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.learn.stop.command import BUNDLED_TRACES

TRACES = BUNDLED_TRACES / "gemma3-270m-draft-train.jsonl"


def _traces(folder: Path, name: str, lines: slice) -> Path:
    path = folder / name
    path.write_text("".join(TRACES.read_text().splitlines(keepends=True)[lines]))
    return path


@pytest.mark.parametrize("how", ["again", "directory", "copy"])
def test_a_trace_file_given_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    first = _traces(tmp_path, "a.jsonl", slice(0, 6))
    second = {"again": first, "directory": tmp_path, "copy": tmp_path / "copy" / "b.jsonl"}[how]
    if how == "copy":
        second.parent.mkdir()
        shutil.copy(first, second)
    out = tmp_path / "p.json"
    argv = ["train", "stop-predictor", "--traces", str(first), "--traces", str(second)]
    small = ["--mlp-trials", "1", "--tree-trials", "1", "--latency-calls", "1"]  # if taken
    assert main([*argv, "--out", str(out), *small]) == 2
    repeated = first if how != "copy" else second
    assert capsys.readouterr().err == (
        f"edgespec train stop-predictor: --traces {repeated}: the same traces as {first} "
        "(given twice, or a copy); give each once: its requests would be both training and "
        "test requests\n"
    )
    assert not out.exists()


def test_two_different_files_are_taken_together(tmp_path: Path) -> None:
    from edgespec.learn.stop.command import read_records

    first = _traces(tmp_path, "a.jsonl", slice(0, 3))
    second = _traces(tmp_path, "b.jsonl", slice(3, 5))
    records = read_records([first, second])
    assert [r.request_id for r in records] == [r.request_id for r in read_records([TRACES])[:5]]


@pytest.mark.parametrize("where", ["one file", "two files"])
def test_a_request_traced_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """Requests repeated inside the files (`edgespec trace --dataset X --dataset X` made
    such files) were taken: held-out requests were also training requests."""
    from edgespec.errors import UserInputError
    from edgespec.learn.stop.command import read_records

    lines = TRACES.read_text().splitlines(keepends=True)
    first = tmp_path / "a.jsonl"
    first.write_text(
        "".join(lines[0:3] + lines[1:2]) if where == "one file" else "".join(lines[0:3])
    )
    files = [first]
    if where == "two files":
        files.append(tmp_path / "b.jsonl")
        files[1].write_text("".join(lines[3:5] + lines[2:3]))
    repeated = read_records([TRACES])[1 if where == "one file" else 2].request_id
    also = "twice in it" if where == "one file" else f"in {first} too"
    with pytest.raises(UserInputError) as error:
        read_records(files)
    assert str(error.value) == (
        f"--traces {files[-1]}: request {repeated} is traced {also}; give each request once: "
        "its rows would be both training and test rows"
    )
