"""A tiny target saved as a model directory with its tokenizer, and five GSM8K training
prompts in its words, for the tests that run `edgespec train draft` and `edgespec train
feature-draft` on it (no downloads)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.learn.traces.test_command import tiny_tokenizer
from tests.models.tiny import tiny_target


@pytest.fixture(scope="module")
def target_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests.models.tiny's target (vocabulary 48, hidden size 32) and its tokenizer."""
    directory = tmp_path_factory.mktemp("target") / "target"
    tiny_target().save_pretrained(directory)
    tiny_tokenizer().save_pretrained(directory)
    return directory


@pytest.fixture
def prompts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Five GSM8K training prompts in the tiny tokenizer's words."""
    folder = tmp_path / "prompts"
    folder.mkdir()
    lines = [json.dumps({"prompt": f"w5 w{9 + i} w7 w{20 + i}"}) + "\n" for i in range(5)]
    (folder / "gsm8k_train.jsonl").write_text("".join(lines))
    monkeypatch.setenv("EDGESPEC_PROMPTS", str(folder))
