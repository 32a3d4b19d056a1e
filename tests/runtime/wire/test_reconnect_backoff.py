"""A client channel reaches a verification server back from a restart within about 1 s
(``grpc_common.RECONNECT_OPTIONS``). With gRPC's default backoff (1 s, x1.6, ±20 %) a
channel whose server was down 6.3 s next tried at about 9.3 s (7.4 to 11.1 s by the
jitter), so calls failed ``UNAVAILABLE`` for 1.1 to 4.8 s after the server was back (2.3 to
3.7 s measured; now 0.15 to 0.6 s): a drafter retrying every 50 ms saw a restart as an
outage seconds longer than it was."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.reconnect import RETRY_BACKOFF_S
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.conftest import start_server

DOWN_S = 6.3
"""How long the server stays down, from the client's first failed call: past the default
backoff's fourth attempt (4.1 to 6.2 s), so its fifth is at least 1.1 s later."""
SERVED_WITHIN_S = 1.5
"""The bound after the restart: the new backoff's longest wait (1 s + 20 % jitter), a call
and a poll, with room for a loaded machine."""
WAITED_S = 5.0
"""How long the test waits for an answer after the restart (the old backoff's 4.8 s)."""


def _first_answer(client: RemoteVerifier, until_s: float) -> float | None:
    """Ask for ``Stats`` every retry backoff, as a drafter retries, each call failing
    ``UNAVAILABLE``, until one answers (when: returned) or ``until_s`` passed (``None``)."""
    while time.monotonic() < until_s:
        try:
            client.stats(timeout_s=1.0)
        except RequestError as exc:
            assert exc.code is ErrorCode.UNAVAILABLE, exc
            time.sleep(RETRY_BACKOFF_S)
            continue
        return time.monotonic()
    return None


@contextlib.contextmanager
def _held(port: int) -> Iterator[None]:
    """``port`` bound, not listening, while the server is down: a connection is refused, and
    the kernel gives the port to no other process (a test on another worker got it, so the
    "down" server answered: a flaky run)."""
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # its closed connections
        holder.bind(("127.0.0.1", port))
        yield


def test_a_restarted_server_is_served_again_within_the_reconnect_backoff(
    target: TransformersTarget,
) -> None:
    server = start_server(target, host="127.0.0.1")
    port = server.port
    client = RemoteVerifier(f"127.0.0.1:{port}", timeout_s=5.0)
    client.stats()  # connected
    server.stop(grace_s=0)
    restarted = None
    try:
        with _held(port):  # down: no other test's server may take the port meanwhile
            assert _first_answer(client, time.monotonic() + DOWN_S) is None
        restarted = start_server(target, host="127.0.0.1", port=port)
        restarted_s = time.monotonic()
        served_s = _first_answer(client, restarted_s + WAITED_S)
    finally:
        if restarted is not None:
            restarted.stop(grace_s=0)
        client.close_channel()
    assert served_s is not None, f"not served within {WAITED_S:g} s of the restart"
    assert served_s - restarted_s < SERVED_WITHIN_S  # was 2.3 to 3.7 s


def test_a_new_client_reaches_a_server_restarted_on_the_same_port_at_once(
    target: TransformersTarget,
) -> None:
    """An older client's failed attempts do not fail a new client's first call: each
    channel keeps its own connections (``grpc_common.OWN_CONNECTIONS``). It failed with
    the older one's ``Connection refused`` (a flaky test whose server reused a port)."""
    first = start_server(target)
    port = first.port
    old = RemoteVerifier(f"127.0.0.1:{port}", timeout_s=2.0)
    old.stats()
    first.stop(grace_s=0)
    for _ in range(2):  # its connection fails, then is refused: backing off
        try:
            old.stats()
        except RequestError as exc:
            assert exc.code is ErrorCode.UNAVAILABLE
    again = start_server(target, port=port)
    new = RemoteVerifier(f"127.0.0.1:{port}", timeout_s=2.0)
    try:
        assert new.stats().num_sessions == 0
    finally:
        for client in (old, new):
            client.close_channel()
        again.stop(grace_s=0)
