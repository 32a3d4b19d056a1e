"""The gRPC server's connection bounds (:mod:`edgespec.runtime.wire.grpc_limits`): sockets
that never finish the HTTP/2 handshake are closed after the handshake timeout (gRPC's own
default kept them 120 s), a connection without calls after the idle bound (a drafter's
channel reconnects and its session goes on), one over ``max_connections`` as it is
accepted, and ``ensure_fd_room`` keeps file descriptors for them (the serving command's
to call: a server started in-process leaves its process's limit alone). Before, 1,100
silent sockets under ``ulimit -n 1024`` took every descriptor and real clients timed out."""

from __future__ import annotations

import asyncio
import resource
import socket
import threading
import time
from collections.abc import Callable

import grpc
import pytest

from edgespec.config import ConfigError, from_dict
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.config import MAX_CONNECTIONS, ServerConfig
from edgespec.runtime.wire import grpc_limits
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_common import pb_grpc
from tests.runtime.bad_cases import GREEDY, PROMPT
from tests.runtime.conftest import ServerFactory

_HALF_PREFACE = b"PRI * HTTP/2.0\r\n"


def _closed_after(sock: socket.socket, within_s: float, began: float) -> tuple[float, int]:
    """Seconds from ``began`` until the server closed ``sock``, and the bytes it sent;
    ``(inf, n)`` when it was still open ``within_s`` from now."""
    received = 0
    sock.settimeout(within_s)
    try:
        while data := sock.recv(4096):
            received += len(data)
    except TimeoutError:
        return float("inf"), received
    return time.monotonic() - began, received


def _silent_sockets(port: int, count: int) -> list[socket.socket]:
    """``count`` connections: every other one stops halfway through the HTTP/2 preface."""
    socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
    for sock in socks[1::2]:
        sock.sendall(_HALF_PREFACE)
    return socks


def test_a_connection_that_never_finishes_its_handshake_is_closed(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grpc_limits, "HANDSHAKE_TIMEOUT_S", 1.0)
    server = make_server()
    began = time.monotonic()
    silent, half = _silent_sockets(server.port, 2)
    with silent, half:
        for sock in (silent, half):
            waited, _ = _closed_after(sock, within_s=10.0, began=began)
            assert 0.9 < waited < 5.0


def test_connections_over_the_cap_are_closed_as_they_are_accepted(
    make_server: ServerFactory,
) -> None:
    """Two held, the third is closed before the server sends it anything; one freed, a
    real client is served."""
    server = make_server(max_connections=2)
    held = _silent_sockets(server.port, 2)
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as third:
        waited, received = _closed_after(third, within_s=2.0, began=began)
    assert (waited < 1.0, received) == (True, 0)
    held[0].close()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    health = pb_grpc.VerificationStub(channel).Health(
        pb.HealthRequest(), timeout=10, wait_for_ready=True
    )
    assert health.serving
    held[1].close()
    channel.close()


def _states(
    channel: grpc.Channel,
) -> tuple[Callable[[grpc.ChannelConnectivity], None], threading.Event]:
    """The callback that notes the connectivity states ``channel`` goes through (subscribed:
    unsubscribe it before the channel closes, or grpc's polling thread raises ``Cannot
    monitor channel state: Channel closed!``), and an event set once the channel is idle
    again after being ready (the server closed the connection)."""
    seen: list[grpc.ChannelConnectivity] = []
    idle_again = threading.Event()

    def note(state: grpc.ChannelConnectivity) -> None:
        seen.append(state)
        if state is grpc.ChannelConnectivity.IDLE and grpc.ChannelConnectivity.READY in seen:
            idle_again.set()

    channel.subscribe(note)
    return note, idle_again


def test_an_idle_connection_is_closed_and_a_drafters_session_goes_on(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grpc_limits, "IDLE_CONNECTION_S", 1.0)
    server = make_server()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    note, idle_again = _states(channel)
    stub = pb_grpc.VerificationStub(channel)
    assert stub.Health(pb.HealthRequest(), timeout=10).serving
    began = time.monotonic()
    assert idle_again.wait(10.0)
    assert time.monotonic() - began > 0.5
    assert stub.Health(pb.HealthRequest(), timeout=10).serving  # reconnected
    channel.unsubscribe(note)
    channel.close()
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}", timeout_s=10)
    verifier.open(SessionSpec("s", "c", PROMPT, GREEDY))
    time.sleep(2.0)  # a pause between rounds longer than the idle bound
    reply = verifier.verify(VerifyCall("s", len(PROMPT), ()))
    assert len(reply.outcome.committed_token_ids) == 1
    verifier.close("s")
    verifier.close_channel()


def _limits(
    monkeypatch: pytest.MonkeyPatch, soft: int, hard: int
) -> list[tuple[int, tuple[int, int]]]:
    """Fake ``ulimit -n`` ``soft``/``hard``; the ``setrlimit`` calls made."""
    calls: list[tuple[int, tuple[int, int]]] = []
    monkeypatch.setattr(resource, "getrlimit", lambda _: (soft, hard))
    monkeypatch.setattr(resource, "setrlimit", lambda kind, pair: calls.append((kind, pair)))
    return calls


def test_the_soft_descriptor_limit_is_raised_to_fit_the_connections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _limits(monkeypatch, soft=256, hard=10_000)
    grpc_limits.ensure_fd_room(512)
    assert calls == [(resource.RLIMIT_NOFILE, (640, 10_000))]
    calls = _limits(monkeypatch, soft=640, hard=10_000)
    grpc_limits.ensure_fd_room(512)
    assert calls == []


@pytest.mark.parametrize("hard", [600, 10_000], ids=["no-room", "room"])
def test_a_server_started_in_process_leaves_the_descriptor_limit_alone(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch, hard: int
) -> None:
    """The limit is process-wide: the serving command raises it (and refuses a hard limit
    without room, :mod:`tests.runtime.commands.test_serve_fd_room`), not ``start_server``,
    which raised it (or refused to start) in whatever process started a server."""
    calls = _limits(monkeypatch, soft=256, hard=hard)
    server = make_server(max_connections=512)
    assert server.port > 0
    assert calls == []


def test_max_connections_is_checked_in_the_config() -> None:
    """Its bound is its own, gRPC's C int option (it was ``MAX_MESSAGE_BYTES``'s, the same
    number for another quantity, its message saying only "it")."""
    assert from_dict(ServerConfig, {}).max_connections == 512
    assert from_dict(ServerConfig, {"max_connections": 2**31 - 1}).max_connections == 2**31 - 1
    for value, problem in (
        (0, "must be >= 1, got 0"),
        (2**31, "must be <= 2,147,483,647 (gRPC takes grpc.max_allowed_incoming_connections "
                "as a C int), got 2147483648"),
    ):  # fmt: skip
        with pytest.raises(ConfigError) as info:
            from_dict(ServerConfig, {"max_connections": value})
        assert str(info.value) == f"config field 'max_connections': {problem}"


@pytest.mark.parametrize("value", [MAX_CONNECTIONS, MAX_CONNECTIONS + 1])
def test_the_bound_is_what_grpc_builds_a_server_with(value: int) -> None:
    """``MAX_CONNECTIONS`` builds a server; one more is gRPC's OverflowError."""

    async def build() -> None:
        grpc.aio.server(options=grpc_limits.connection_options(value))

    if value > MAX_CONNECTIONS:
        with pytest.raises(OverflowError):
            asyncio.run(build())
    else:
        asyncio.run(build())
