"""Malformed requests are logged in one line at most every 10 s, not one line each: uvicorn
logged "Invalid HTTP request received." for every one, so a client sending them at line
rate filled the device's log. Each is still answered 400 with h11's reason."""

from __future__ import annotations

import logging
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from edgespec.runtime.openai_api import connections, uvicorn_lines
from edgespec.runtime.openai_api.serve import ApiThread

MALFORMED = b"NOT HTTP AT ALL\r\n\r\n"
REASON = "400 invalid HTTP request: illegal request line: 'NOT HTTP AT ALL'"
LINE = re.compile(r"the OpenAI-compatible endpoint refused a malformed request from "
                  r"127\.0\.0\.1:\d+: " + re.escape(REASON))  # fmt: skip
SERVER = """
from fastapi import FastAPI
from edgespec.runtime.openai_api.serve import ApiThread
app = FastAPI()
app.get("/health")(lambda: {"status": "ok"})
server = ApiThread(app, "127.0.0.1").start()
print(server.port, flush=True)
server.wait()
"""


def _exchange(port: int, request: bytes) -> bytes:
    """Send ``request`` on a connection of its own; the answer's first line."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        data = sock.recv(65536)
    return data.split(b"\r\n")[0]


def _refused(port: int, times: int) -> list[bytes]:
    """Send ``MALFORMED`` on ``times`` connections; the first line of each answer."""
    return [_exchange(port, MALFORMED) for _ in range(times)]


def _logged(tmp_path: Path, send: Callable[[int], None]) -> str:
    """What an endpoint in a process of its own writes to its stderr while ``send`` (given
    its port) talks to it."""
    log = tmp_path / "stderr"
    with log.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE,
                                   stderr=stderr, cwd=Path(__file__).parents[3])  # fmt: skip
    try:
        assert process.stdout is not None
        send(int(process.stdout.readline()))
    finally:
        process.kill()
        process.wait()
    return log.read_text()


def test_50_malformed_requests_write_one_line_to_the_devices_log(tmp_path: Path) -> None:
    def send(port: int) -> None:
        assert _refused(port, 50) == [b"HTTP/1.1 400 Bad Request"] * 50

    [line] = _logged(tmp_path, send).splitlines()  # uvicorn wrote 50 "Invalid HTTP request ..."
    assert LINE.fullmatch(line), line


UPGRADE = (
    b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: %s\r\n"
    b"Content-Length: 0\r\n\r\n"
)


def test_requests_asking_for_an_upgrade_write_nothing_to_the_devices_log(tmp_path: Path) -> None:
    """uvicorn wrote two warnings for each request with an ``Upgrade`` header (a websocket
    or h2c one), unthrottled: 5.9 MB of log in 10 s from one client. Each is answered as
    plain HTTP."""

    def send(port: int) -> None:
        for kind in (b"websocket", b"h2c") * 10:
            assert _exchange(port, UPGRADE % kind) == b"HTTP/1.1 200 OK"

    assert _logged(tmp_path, send) == ""


@pytest.fixture
def endpoint() -> Iterator[tuple[ApiThread, list[float]]]:
    """An endpoint on loopback and its log clock, to be moved by hand."""
    now = [100.0]
    server = ApiThread(FastAPI(), "127.0.0.1", log_clock=lambda: now[0]).start()
    yield server, now
    server.stop()


def test_the_next_line_says_how_many_were_not_logged(
    endpoint: tuple[ApiThread, list[float]], caplog: pytest.LogCaptureFixture
) -> None:
    server, now = endpoint
    # uvicorn's loggers do not propagate, and uvicorn set them up as the endpoint started
    uvicorn_error = logging.getLogger("uvicorn.error")
    uvicorn_error.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.WARNING, logger=connections.__name__):
            _three_bursts(server, now)
    finally:
        uvicorn_error.removeHandler(caplog.handler)
    assert not [r.message for r in caplog.records if r.name == "uvicorn.error"]
    first, then = [r.message for r in caplog.records if r.name == connections.__name__]
    assert LINE.fullmatch(first), first
    assert then.endswith(f"{REASON}; 50 more since the last such line, not logged")
    assert LINE.fullmatch(then.removesuffix("; 50 more since the last such line, not logged"))


def test_uvicorns_other_lines_still_come_through(caplog: pytest.LogCaptureFixture) -> None:
    inner = logging.getLogger("edgespec.test.uvicorn_error")
    filtered = uvicorn_lines.WithoutPerRequestLines(inner)
    with caplog.at_level(logging.INFO, logger=inner.name):
        for line in (*uvicorn_lines.UVICORN_PER_REQUEST, "No supported WebSocket library …"):
            filtered.warning(line)
        filtered.error("Exception in ASGI application")
    assert [r.message for r in caplog.records] == ["Exception in ASGI application"]


def _three_bursts(server: ApiThread, now: list[float]) -> None:
    """50 malformed requests at 100 s, one at 109.9 s, one at 110 s."""
    assert _refused(server.port, 50) == [b"HTTP/1.1 400 Bad Request"] * 50
    now[0] = 109.9  # still within the interval: counted, not logged
    _refused(server.port, 1)
    now[0] = 110.0
    _refused(server.port, 1)
