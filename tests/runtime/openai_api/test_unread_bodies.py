"""A response sent before the request's body was read whole (a 413 for a declared length,
a 415, a 404, a GET that never reads one) closes its connection: before, the endpoint read
and dropped whatever body came after it, each byte postponing uvicorn's keep-alive
timeout, so a client trickling a byte every few seconds held the connection for good."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest

from edgespec.runtime.openai_api.serve import ApiThread
from tests.runtime.openai_api.conftest import LIMITS

FOREVER = str(10**12)
JSON = "Content-Type: application/json\r\n"
CLOSED_WITHIN_S = 2.0
"""uvicorn's keep-alive timeout is 5 s: a connection closed sooner was closed for this."""


def _head(method: str, path: str, headers: str) -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode()


def _response_then_eof(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and how long that took."""
    started, data = time.monotonic(), b""
    sock.settimeout(10)
    while chunk := sock.recv(65536):
        data += chunk
    return data, time.monotonic() - started


def _status_headers_error(raw: bytes) -> tuple[int, dict[str, str], Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)


def _unread(sock: socket.socket, total: int = 8 << 20) -> int:
    """Send up to ``total`` bytes of body; how many the server's socket took before it
    refused more (a closed socket answers the first bytes with a reset)."""
    sent, piece = 0, b"a" * (64 << 10)
    sock.settimeout(5)
    try:
        while sent < total:
            sock.sendall(piece)
            sent += len(piece)
            time.sleep(0.001)
    except OSError:  # BrokenPipeError, ConnectionResetError
        pass
    return sent


@pytest.mark.parametrize(
    ("request_head", "status", "message"),
    [
        (_head("POST", "/v1/completions", f"{JSON}Content-Length: {FOREVER}\r\n"), 413,
         f"request body is {FOREVER} bytes, over the limit of {LIMITS.max_body_bytes} "
         "(--openai-max-body-bytes)"),
        (_head("POST", "/v1/completions", f"Content-Type: text/plain\r\nContent-Length: "
               f"{FOREVER}\r\n"), 415, 'Content-Type must be application/json, got "text/plain"'),
        (_head("GET", "/nope", "Transfer-Encoding: chunked\r\n"), 404, "GET /nope: Not Found"),
        (_head("GET", "/health", f"Content-Length: {FOREVER}\r\n"), 200, None),
    ],
)  # fmt: skip
def test_a_response_before_the_body_is_read_closes_the_connection(
    api: ApiThread, request_head: bytes, status: int, message: str | None
) -> None:
    with socket.create_connection(("127.0.0.1", api.port), timeout=10) as sock:
        sock.sendall(request_head)
        raw, took = _response_then_eof(sock)
        got, headers, body = _status_headers_error(raw)
        assert (got, headers.get("connection")) == (status, "close")
        if message is not None:
            assert body["error"]["message"] == message
        assert took < CLOSED_WITHIN_S, f"closed after {took:.1f} s"
        sent = _unread(sock)
    assert sent < 4 << 20, f"the endpoint took {sent} bytes of body after its response"


def test_a_body_read_whole_keeps_the_connection(api: ApiThread) -> None:
    """The 415 is sent without reading the body, but the body came whole with the head:
    the connection stays open for the next request."""
    with socket.create_connection(("127.0.0.1", api.port), timeout=10) as sock:
        headers = "Content-Type: text/plain\r\nContent-Length: 2\r\n"
        sock.sendall(_head("POST", "/v1/completions", headers) + b"{}")
        sock.sendall(_head("GET", "/health", "Connection: close\r\n"))
        raw, _ = _response_then_eof(sock)
    first, _, second = raw.partition(b"HTTP/1.1 200 OK\r\n")
    assert first.startswith(b"HTTP/1.1 415 ") and b"connection: close" not in first.lower()
    assert b'"running":0,"queued":0,"servers":[' in second  # /health, its state aside
