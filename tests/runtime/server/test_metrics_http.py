"""The ``/metrics`` port is bounded as the gRPC port is (docs/DEPLOY.md, step 2): sockets
that connect and never speak hold at most ``max_connections`` threads and descriptors, are
closed after the head deadline, and give way to a scrape; the exposition is
prometheus_client's, unchanged."""

from __future__ import annotations

import os
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from edgespec.runtime.server.counters import ServiceCounters, ServiceMetrics
from edgespec.runtime.server.metrics_http import (
    HEAD_TIMEOUT_S,
    MAX_CONNECTIONS,
    MAX_HEAD_BYTES,
    WRITE_TIMEOUT_S,
    BoundedWSGIServer,
    HttpBounds,
)
from tests.runtime.server.test_link_and_counters import ENGINE

pytest.importorskip("prometheus_client")

METRICS = ServiceCounters(busy=True, num_sessions_opened=3).metrics(ENGINE, 2)


@contextmanager
def _serving(
    bounds: HttpBounds | None = None, metrics: Callable[[], ServiceMetrics] = lambda: METRICS
) -> Iterator[BoundedWSGIServer]:
    from edgespec.runtime.server.prometheus import start_prometheus

    server = start_prometheus(0, metrics, bounds=bounds)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _connect(server: BoundedWSGIServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=10)


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _scrape(server: BoundedWSGIServer) -> tuple[str, bytes]:
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


def _expected_body() -> bytes:
    from prometheus_client import CollectorRegistry, generate_latest

    from edgespec.runtime.server.prometheus import _Collector

    registry = CollectorRegistry()
    registry.register(_Collector(lambda: METRICS))  # type: ignore[arg-type]
    return generate_latest(registry)


def _settle(at_most: Callable[[], bool], timeout_s: float = 3.0) -> bool:
    deadline_s = time.monotonic() + timeout_s
    while not at_most():
        if time.monotonic() > deadline_s:
            return False
        time.sleep(0.02)
    return True


def test_the_exposition_is_prometheus_clients_for_the_same_registry() -> None:
    with _serving() as server:
        content_type, body = _scrape(server)
    assert body == _expected_body()
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"  # as prometheus_client's


def test_silent_sockets_beyond_the_cap_hold_no_thread_and_a_scrape_gets_through() -> None:
    num_extra = 20
    with _serving() as server, ExitStack() as stack:
        threads_before = threading.active_count()
        fds_before = len(os.listdir("/proc/self/fd"))
        silent = [stack.enter_context(_connect(server)) for _ in range(MAX_CONNECTIONS + num_extra)]
        for sock in silent[:num_extra]:  # closed, oldest first, for the newer ones
            assert sock.recv(1) == b""
        # (a closed one's thread and descriptor go a moment after its client sees it closed,
        # and the newest one's thread starts a moment after its connect: on a loaded machine
        # one was seen missing still)
        assert _settle(lambda: threading.active_count() - threads_before == MAX_CONNECTIONS)

        # this process holds the clients' ends too: one descriptor each
        def num_server_fds() -> int:
            return len(os.listdir("/proc/self/fd")) - fds_before - len(silent)

        assert _settle(lambda: num_server_fds() <= MAX_CONNECTIONS), num_server_fds()
        assert _scrape(server)[1] == _expected_body()  # the oldest silent one gave way


def test_a_new_connection_is_answered_503_while_every_slot_is_answering() -> None:
    release = threading.Event()
    entered = threading.Semaphore(0)

    def slow_metrics() -> ServiceMetrics:
        entered.release()
        release.wait(10)
        return METRICS

    with _serving(HttpBounds(max_connections=2), slow_metrics) as server, ExitStack() as stack:
        busy = [stack.enter_context(_connect(server)) for _ in range(2)]
        for sock in busy:
            sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        assert entered.acquire(timeout=5) and entered.acquire(timeout=5)
        with _connect(server) as third:
            refused = _read_all(third)
        release.set()
        answered = [_read_all(sock) for sock in busy]
    message = (b"# HTTP 503 Service Unavailable: 2 connections open, the limit, each being "
               b"answered; retry\n")  # fmt: skip
    assert refused == (
        b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(message) + message
    )
    assert all(a.startswith(b"HTTP/1.0 200 OK\r\n") for a in answered)
    assert all(a.endswith(_expected_body()) for a in answered)


def test_a_silent_socket_is_closed_at_the_head_deadline() -> None:
    with _serving(HttpBounds(head_timeout_s=1.0)) as server, _connect(server) as sock:
        start_s = time.monotonic()
        assert sock.recv(1) == b""  # closed, nothing sent
        waited_s = time.monotonic() - start_s
    assert 0.9 <= waited_s < 3.0  # slack for a loaded 2-core machine


def test_a_trickled_head_is_answered_408_at_the_deadline() -> None:
    with _serving(HttpBounds(head_timeout_s=1.0)) as server, _connect(server) as sock:
        start_s = time.monotonic()
        reply = b""
        for byte in b"GET /metrics HTTP/1.0\r\nX-Slow: " + b"a" * 100:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            sock.settimeout(0.1)
            try:
                if reply := sock.recv(4096):
                    break
            except TimeoutError:
                continue
        sock.settimeout(10)
        reply += _read_all(sock)
        waited_s = time.monotonic() - start_s
    assert reply.startswith(b"HTTP/1.0 408 Request Timeout\r\n")
    assert reply.endswith(b"\r\n\r\n# HTTP 408 Request Timeout: the request head was not "
                          b"received within 1 s\n")  # fmt: skip
    assert 0.9 <= waited_s < 3.0


def test_a_head_over_the_bound_is_answered_431() -> None:
    with _serving() as server, _connect(server) as sock:
        sock.sendall(b"GET /metrics HTTP/1.0\r\nX-Big: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n")
        reply = _read_all(sock)
    assert reply.startswith(b"HTTP/1.0 431 Request Header Fields Too Large\r\n")
    assert reply.endswith(b"# HTTP 431 Request Header Fields Too Large: the request head is "
                          b"over the limit of 8192 bytes\n")  # fmt: skip


def test_a_head_just_within_the_bound_is_answered() -> None:
    head = b"GET /metrics HTTP/1.0\r\nX-Pad: "
    head += b"a" * (MAX_HEAD_BYTES - len(head) - 4) + b"\r\n\r\n"
    assert len(head) == MAX_HEAD_BYTES
    with _serving() as server, _connect(server) as sock:
        sock.sendall(head)
        assert _read_all(sock).endswith(b"\r\n\r\n" + _expected_body())


def test_a_response_the_client_does_not_read_is_cut_off_at_its_deadline() -> None:
    from edgespec.runtime.server.metrics_http import _DeadlineWriter

    server_end, client_end = socket.socketpair()
    with server_end, client_end:
        writer = _DeadlineWriter(server_end, time.monotonic() + 0.5, time.monotonic)
        start_s = time.monotonic()
        with pytest.raises(ConnectionAbortedError, match="^the response was not read in time$"):
            writer.write(b"x" * (64 << 20))  # more than the sockets' buffers hold
        waited_s = time.monotonic() - start_s
        with pytest.raises(ConnectionAbortedError):  # past the deadline: not even tried
            writer.write(b"x")
    assert 0.4 <= waited_s < 2.5


def test_deploy_md_states_the_bounds_of_the_metrics_port() -> None:
    deploy = (Path(__file__).resolve().parents[3] / "docs/DEPLOY.md").read_text()
    text = " ".join(deploy.split())
    assert f"at most {MAX_CONNECTIONS} connections open at once on the `/metrics` port" in text
    assert f"request head whole within {HEAD_TIMEOUT_S:g} s" in text
    assert f"at most {MAX_HEAD_BYTES // 1024} KiB (431)" in text
    assert f"response read within {WRITE_TIMEOUT_S:g} s" in text
