"""Fixtures the ``edgespec draft`` command tests share: the tiny target saved with a
tokenizer, and a loopback server whose target it names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.word_tokenizer import make_word_tokenizer


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory, target_model: Any) -> Path:
    """The tiny target saved with a tokenizer: a draft (or target) that has one."""
    directory = tmp_path_factory.mktemp("with-tokenizer")
    target_model.save_pretrained(directory)
    make_word_tokenizer(target_model.config.vocab_size).save_pretrained(directory)
    return directory


@pytest.fixture
def server(target: TransformersTarget, model_dir: Path) -> Iterator[ServerThread]:
    """A loopback server whose target is named by ``model_dir`` (its tokenizer's home)."""
    running = start_server(target, target=str(model_dir), host="127.0.0.1")
    yield running
    running.stop(grace_s=0)
