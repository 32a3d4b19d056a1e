"""The gRPC clients of an edge drafter's verification servers (``edgespec draft`` and its
OpenAI endpoint alike), made from its ``DrafterConfig``: each with its token, CA, TLS server
name, request timeout and message limit, and a close of at most :data:`CLOSE_TIMEOUT_S`."""

from __future__ import annotations

from typing import Any

from edgespec.runtime.wire import grpc_client
from edgespec.runtime.wire.grpc_client import RemoteVerifier

CLOSE_TIMEOUT_S = 2.0
"""The most seconds a drafter's ``CloseSession`` waits for its answer (less when
``--request-timeout-s`` is: :func:`close_timeout_s`). A close does no model work; the close
of an open the server did not answer (a server stopped or hung) must not wait another
request timeout before its request is answered."""


def close_timeout_s(request_timeout_s: float) -> float:
    """How long a drafter's close waits: :data:`CLOSE_TIMEOUT_S`, at most the request
    timeout."""
    return min(CLOSE_TIMEOUT_S, request_timeout_s)


def drafter_clients(config: Any) -> tuple[RemoteVerifier, ...]:
    """A client of each server ``config`` (a ``DrafterConfig``) names, with its token, CA,
    TLS server name, request timeout, message limit and :func:`close_timeout_s`."""
    close_s = close_timeout_s(config.request_timeout_s)
    # the class looked up as each client is made (a test may stand a fake in), its settings
    # in order: the token, the CA, the timeout, the message limit, the TLS name, the close's
    settings = (config.auth_token, config.tls_ca, config.request_timeout_s,
                config.max_message_bytes, config.tls_server_name, close_s)  # fmt: skip
    return tuple(grpc_client.RemoteVerifier(address, *settings) for address in config.servers)
