"""Fixtures for the server tests: ``serve``, loopback gRPC servers of the semantic rule."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server


@pytest.fixture
def serve(target: TransformersTarget) -> Iterator[Any]:
    """``serve(head, **kw)`` starts a server whose semantic rule uses ``head``; all stop
    at the end of the test."""
    started: list[ServerThread] = []

    def make(head: Any, **kw: Any) -> ServerThread:
        server = start_server(target, rules=semantic_rules(head), **kw)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop(grace_s=0)
