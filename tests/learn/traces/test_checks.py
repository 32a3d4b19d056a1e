"""`edgespec trace`'s flags and prompt files are checked before any model loads
(edgespec.learn.traces.checks): each problem is one line naming the flag, file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.learn.traces.capture import capture
from edgespec.learn.traces.checks import slo_classes
from edgespec.learn.traces.settings import CaptureSettings
from edgespec.models.registry import TRIMMED_MARKER
from tests.models.tiny import VOCAB, tiny_draft


def _trace(tmp_path: Path, *extra: str) -> int:
    """``edgespec trace`` with a target that does not exist: a run that got as far as
    loading it would fail differently."""
    args = ["trace", "--target", str(tmp_path / "never-loaded"), "--draft", "ngram"]
    return main([*args, *extra, "--out", str(tmp_path / "t.jsonl")])


def cut_off_draft(directory: Path) -> Path:
    """A tiny trimmed draft whose save stopped before its marker: weights, no marker."""
    tiny_draft(list(range(0, VOCAB, 2))).save(directory)
    (directory / TRIMMED_MARKER).unlink()
    return directory


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        (
            "gemma3-270m",  # tens of seconds to load: the draft is checked first
            "model directory '{draft}' holds a trimmed draft without its trimmed_vocab.json: "
            "its save was cut off before it finished; save or train the draft again",
        ),
        ("{tmp}/gone", "model path '{tmp}/gone' does not exist"),  # named before the draft
    ],
    ids=["cut-off-draft", "missing-target"],
)
def test_a_bad_model_is_refused_in_one_line_before_any_model_loads(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    problem: str,
) -> None:
    """Was refused only after the target had loaded (tens of seconds for Gemma 3 270M)."""
    from edgespec.models import loading

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was loaded before the models were checked")

    monkeypatch.setattr(loading, "load_model", never)
    draft = cut_off_draft(tmp_path / "draft")
    capsys.readouterr()  # the library's progress bar of the save
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "w5 w9"}\n')
    args = ["trace", "--target", target.format(tmp=tmp_path), "--draft", str(draft)]
    assert main([*args, "--dataset", str(prompts), "--out", str(tmp_path / "t.jsonl")]) == 2
    shown = problem.format(draft=draft, tmp=tmp_path)
    assert capsys.readouterr().err == f"edgespec trace: {shown}\n"
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"prompt": "w5 w9"}\n{"prompt": "w5"\n', ":2: not valid JSON (Expecting ',' delimiter)"),
        ('{"text": "w5"}\n', ":1: expected a string field 'prompt' (no such field)"),
        ('\n{"prompt": 5}\n', ":2: expected a string field 'prompt' (got int)"),
        ('["w5"]\n', ":1: a JSON list, not an object"),
        ("", ": holds no prompts"),
        ("\n  \n", ": holds no prompts"),
    ],
)
def test_a_bad_prompt_file_is_refused_before_the_models_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    assert _trace(tmp_path, "--dataset", str(path)) == 2
    assert capsys.readouterr().err == f"edgespec trace: --dataset {path}{problem}\n"
    assert not (tmp_path / "t.jsonl").exists()


def test_a_prompt_file_that_is_not_utf8_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"prompt": "a"}\n{"prompt": "\xff"}\n')
    assert _trace(tmp_path, "--dataset", str(path)) == 2
    err = capsys.readouterr().err
    assert err == f"edgespec trace: --dataset {path}:2: not UTF-8 text (invalid start byte)\n"


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        (",", "give at least one class name, got ','"),
        (" ", "give at least one class name, got ' '"),
        ("a,,b", "an empty class name in 'a,,b' (names are comma-separated)"),
        ("a,", "an empty class name in 'a,' (names are comma-separated)"),
    ],
)
def test_slo_classes_need_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str, problem: str
) -> None:
    assert _trace(tmp_path, "--slo-classes", given) == 2
    assert capsys.readouterr().err == f"edgespec trace: --slo-classes: {problem}\n"


def test_slo_classes_are_the_comma_separated_names() -> None:
    assert slo_classes("default") == ("default",)
    assert slo_classes(" interactive , batch") == ("interactive", "batch")


def test_capture_settings_refuse_no_classes_and_capture_of_nothing_is_empty() -> None:
    with pytest.raises(ValueError, match=r"slo_classes must be non-empty names, got \(\)"):
        CaptureSettings(slo_classes=())
    with pytest.raises(ValueError, match=r"slo_classes must be non-empty names, got \('a', ''\)"):
        CaptureSettings(slo_classes=("a", ""))
    with pytest.raises(ValueError, match="num_drafters must be >= 1, got 0"):
        CaptureSettings(num_drafters=0)
    no_model = None
    assert capture(no_model, no_model, no_model, [], CaptureSettings()) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--rate", "nan"], "--rate must be a finite number > 0, got nan"),
        (["--rate", "inf"], "--rate must be a finite number > 0, got inf"),
        (["--rate", "1e-320"], "--rate must be a finite number > 0, got 1e-320"),
        (["--gamma", "65"], "--gamma must be <= 64 (the most tokens a block holds), got 65"),
        (
            ["--draft", "d", "--tree", "8,8", "--tree-max-nodes", "65"],
            "--tree-max-nodes must be in [1, 64] (the most tokens a block holds), got 65",
        ),
        (["--tree-min-prob", "0.5"], "--tree-min-prob shapes a token tree: it needs --tree"),
        (["--tree-max-nodes", "8"], "--tree-max-nodes shapes a token tree: it needs --tree"),
        (
            ["--draft", "d", "--tree", "1,,2"],
            "--tree: tree branching has an empty entry in '1,,2' (one integer per depth)",
        ),
        (
            ["--draft", "d", "--tree", "1,1,1,1,1"],
            "--tree 1,1,1,1,1 has 5 depths, more than --gamma 4",
        ),
        (
            ["--draft", "d", "--tree", "2,2", "--gamma", "1"],
            "--tree 2,2 has 2 depths, more than --gamma 1",
        ),
        (
            ["--draft", "d", "--tree", "1,1,1,1,1,1,1,1,1", "--window", "dynamic"],
            "--tree 1,1,1,1,1,1,1,1,1 has 9 depths, more than --window dynamic's largest γ 8 "
            "(--gamma 4, or 8 if larger)",
        ),
    ],
)
def test_out_of_range_or_unused_flags_are_refused_before_the_models_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], problem: str
) -> None:
    assert _trace(tmp_path, *flags) == 2
    assert capsys.readouterr().err == f"edgespec trace: {problem}\n"


def test_the_block_limit_is_the_in_process_verifiers() -> None:
    import inspect

    from edgespec.learn.traces.checks import MAX_DRAFT_TOKENS
    from edgespec.runtime.wire.inprocess import LocalVerifier

    default = inspect.signature(LocalVerifier).parameters["max_draft_tokens"].default
    assert default == MAX_DRAFT_TOKENS


@pytest.mark.parametrize(
    "flags",
    [
        ["--tree", "2,2,1,1"],  # as deep as --gamma 4
        ["--tree", "2,1,1,1,1,1", "--window", "dynamic"],  # a dynamic window reaches γ 8
        ["--tree", "1,1,1,1,1,1,1,1,1", "--window", "dynamic", "--gamma", "9"],
    ],
)
def test_a_tree_as_deep_as_a_round_reaches_is_kept(flags: list[str]) -> None:
    import argparse

    from edgespec.learn.traces.checks import check_args
    from edgespec.learn.traces.command import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert check_args(parser.parse_args(["--draft", "d", "--out", "t.jsonl", *flags])) is None
