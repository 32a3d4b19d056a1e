"""A tiny target saved as a model directory with its tokenizer, for the tests that run
`edgespec train draft` and `edgespec train feature-draft` on it (no downloads)."""

from __future__ import annotations

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
