"""Prompt sets: templates, JSONL errors, the truncated ShareGPT array."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.learn.prompts import format_prompt, iter_json_array, load_jsonl_prompts, load_prompts


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
