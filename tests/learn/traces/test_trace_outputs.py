"""`edgespec trace` with a pair that does not fit, an earlier trace at ``--out``, and what
it records and logs (tiny local models saved in the test).

Before: a draft of another vocabulary ended in a traceback after loading (``RequestError:
INVALID_ARGUMENT: draft token 0 (id 82) is outside the vocabulary [0, 64)``, exit 1); an
``--out`` holding a trace was replaced silently; the records named the models as typed
(``models/draft``), which profiles name by absolute path; a log got every request's
stages (3 to 5 lines each) and the bar's last state."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.learn.traces.records import read_trace
from tests.models.pair_dirs import PAIR_VOCAB_REFUSALS, save_pair_models


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_pair_models(tmp_path_factory.mktemp("models"))


def _trace(root: Path, draft: str, *more: str) -> int:
    args = ["trace", "--target", "target", "--draft", draft, "--dataset", "p.jsonl"]
    return main([*args, "--max-new-tokens", "6", "--threads", "1", *more])


@pytest.mark.parametrize(("draft", "message"), PAIR_VOCAB_REFUSALS)
def test_a_draft_of_another_vocabulary_is_refused_once_loaded(
    models: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    draft: str, message: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(models)
    assert _trace(models, draft, "--out", "never.jsonl") == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"edgespec trace: {message}"
    assert not (models / "never.jsonl").exists()


def test_an_earlier_trace_is_kept_without_overwrite_and_records_name_the_models(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.chdir(models)
    out, folder = tmp_path / "t.jsonl", tmp_path / "d"
    assert _trace(models, "draft", "--out", str(out), "--out-dir", str(folder)) == 0
    err = capsys.readouterr().err.splitlines()
    logged = [line for line in err if line.startswith("p-")]
    records = read_trace(out)
    assert logged == [
        f"p-{i} ({i + 1}/2): 6 tokens, {len(r.rounds)} rounds, "
        f"{sum(x.num_accepted for x in r.rounds)} drafts accepted, lossless=None"
        for i, r in enumerate(records)
    ]
    assert not any("tracing" in line or "..." in line for line in err)
    assert {(r.target_model, r.draft_model) for r in records} == {
        (str(models / "target"), str(models / "draft"))
    }
    before = out.read_text()
    assert _trace(models, "ngram", "--out", str(out)) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edgespec trace: --out: {out} already holds a trace; give another --out, or "
        "--overwrite to replace it"
    )
    assert _trace(models, "ngram", "--limit", "1", "--out-dir", str(folder)) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edgespec trace: --out-dir: {folder / 'p.jsonl'} already holds a trace; give "
        "another --out-dir, or --overwrite to replace it"
    )
    notes = tmp_path / "notes.txt"  # was: "already holds a trace", of any file
    notes.write_text("hello notes\n")
    assert _trace(models, "ngram", "--out", str(notes)) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edgespec trace: --out: {notes} already holds other data (not a trace); give "
        "another --out, or --overwrite to replace it"
    )
    assert out.read_text() == before
    assert _trace(models, "ngram", "--limit", "1", "--out", str(out), "--overwrite") == 0
    assert [r.draft_model for r in read_trace(out)] == ["ngram"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--out", "t.jsonl", "--json", "t.jsonl"],
         "--json t.jsonl is also --out's file: the second would replace the first; give another"),
        (["--out", "d", "--out-dir", "d"], "--out d is --out-dir's folder: give a file outside it"),
        (["--out", "d/p.jsonl", "--out-dir", "d"],
         "--out-dir d/p.jsonl is also --out's file: the second would replace the first; give "
         "another"),
        (["--out", "t.jsonl", "--dataset", "p.jsonl"],
         "--dataset p.jsonl: given twice: a set's name begins its request ids and names its "
         "--out-dir file; give each set once"),
        (["--out-dir", "a"],  # a/p.jsonl is a folder: it failed after --out was written
         "--out-dir: a/p.jsonl is a folder where this trace writes a file; move it or give "
         "another"),
        (["--out", "t.jsonl", "--dataset", "a/p.jsonl"],
         "--dataset a/p.jsonl: named p as --dataset p.jsonl is: a set's name begins its "
         "request ids and names its --out-dir file; give each set once"),
    ],
)  # fmt: skip
def test_outputs_at_one_path_and_sets_of_one_name_are_refused_before_anything_loads(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str,
) -> None:  # fmt: skip
    """--json at --out replaced the trace with the summary (exit 0); --out at --out-dir
    failed after the run (File exists); a set given twice, or two files of one stem, gave
    records of one request id, the second --out-dir file replacing the first."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.jsonl").write_text((models / "p.jsonl").read_text())
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "p.jsonl").write_text((models / "p.jsonl").read_text())
    if "--out-dir" in flags and "d" not in flags:
        (tmp_path / "a" / "p.jsonl").unlink()
        (tmp_path / "a" / "p.jsonl").mkdir()
    argv = ["trace", "--target", "no-such-model", "--draft", "ngram", "--dataset", "p.jsonl"]
    assert main([*argv, *flags, "--overwrite"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"edgespec trace: {message}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "p.jsonl"]
