"""Fixtures for the edge tests: a loopback verification server on the tiny target, a client
of it, the batched tiny draft and the tiny draft saved as a model folder (one each per test
module)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.batched_draft import BatchedDraftModel
from edgespec.runtime.testing import VOCAB
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.word_tokenizer import make_word_tokenizer


@pytest.fixture(scope="module")
def server(target: TransformersTarget) -> Iterator[ServerThread]:
    running = start_server(target)
    yield running
    running.stop(grace_s=0)


@pytest.fixture(scope="module")
def verifier(server: ServerThread) -> Iterator[RemoteVerifier]:
    client = RemoteVerifier(f"127.0.0.1:{server.port}")
    yield client
    client.close_channel()


@pytest.fixture(scope="module")
def batched(draft_model: Any) -> BatchedDraftModel:
    return BatchedDraftModel(draft_model)


@pytest.fixture(scope="module")
def draft_dir(tmp_path_factory: pytest.TempPathFactory, draft_model: Any) -> Path:
    """The tiny draft saved with a tokenizer (words ``w0`` … as ids 0 …)."""
    directory = tmp_path_factory.mktemp("draft")
    draft_model.save_pretrained(directory)
    make_word_tokenizer(VOCAB, fuse=False).save_pretrained(directory)
    return directory
