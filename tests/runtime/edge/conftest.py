"""Fixtures for the edge tests: a loopback verification server on the tiny target, a client
of it and the batched tiny draft (one each per test module)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.batched_draft import BatchedDraftModel
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_server import ServerThread
from tests.runtime.conftest import start_server


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
