"""The endpoint's connections are bounded before a request reaches the app: a request head
has a deadline, open connections a cap, malformed HTTP and a body length declared twice get
OpenAI error bodies; raw sockets against a small app under the endpoint's own server."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from edgespec.runtime.openai_api.connections import bounded_protocol, raw_response
from edgespec.runtime.openai_api.errors import ApiError
from edgespec.runtime.openai_api.http_connection import MAX_HEAD_BYTES
from edgespec.runtime.openai_api.serve import ApiThread

HEAD_TIMEOUT_S = 0.6


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/health")
    async def health() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @app.post("/echo")
    async def echo(request: Request) -> JSONResponse:
        return JSONResponse({"bytes": len(await request.body())})

    return app


@pytest.fixture
def server() -> Iterator[ApiThread]:
    running = ApiThread(_app(), "127.0.0.1", head_timeout_s=HEAD_TIMEOUT_S,
                        max_connections=3, max_per_address=3).start()  # fmt: skip
    yield running
    running.stop()


def _connect(server: ApiThread) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def _read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _read_response(sock: socket.socket) -> bytes:
    """One whole response (head and ``Content-Length`` bytes of body) of a kept connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def _reply(raw: bytes) -> tuple[int, dict[str, str], Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)


GET_HEALTH = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"


def test_a_request_head_that_trickles_is_408_and_closed(server: ApiThread) -> None:
    start = time.monotonic()  # before connecting: the server's deadline starts at accept
    with _connect(server) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\n")  # the head's end never comes
        status, headers, body = _reply(_read_all(sock))
        took = time.monotonic() - start
    assert (status, headers["connection"]) == (408, "close")
    assert body["error"]["code"] == "request_timeout"
    assert body["error"]["message"] == "the request head was not received within 0.6 s"
    assert HEAD_TIMEOUT_S <= took < HEAD_TIMEOUT_S + 2


def test_an_idle_connection_is_closed_without_a_reply(server: ApiThread) -> None:
    start = time.monotonic()  # before connecting: the server's deadline starts at accept
    with _connect(server) as sock:
        assert _read_all(sock) == b""
        assert HEAD_TIMEOUT_S <= time.monotonic() - start < HEAD_TIMEOUT_S + 2


def test_the_deadline_holds_for_each_request_of_a_kept_alive_connection(
    server: ApiThread,
) -> None:
    """The first request is answered and the connection kept; a second head that trickles
    is cut like the first would have been."""
    with _connect(server) as sock:
        sock.sendall(GET_HEALTH)
        first = _read_response(sock)
        assert first.startswith(b"HTTP/1.1 200 ") and first.endswith(b'{"status":"ok"}')
        time.sleep(HEAD_TIMEOUT_S * 1.5)  # an idle kept-alive connection is not cut by it
        sock.sendall(GET_HEALTH[:10])
        status, _, body = _reply(_read_all(sock))
    assert (status, body["error"]["code"]) == (408, "request_timeout")


def test_a_slow_body_is_not_cut_by_the_head_deadline(server: ApiThread) -> None:
    with _connect(server) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                     b"Content-Type: application/json\r\n\r\n12")  # fmt: skip
        time.sleep(HEAD_TIMEOUT_S * 1.5)
        sock.sendall(b"34")
        reply = _read_response(sock)
    assert reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b'{"bytes":4}')


def test_a_connection_over_the_cap_is_503_and_closed(server: ApiThread) -> None:
    held = [_connect(server) for _ in range(3)]
    try:
        for sock in held:  # each of them is served
            sock.sendall(GET_HEALTH)
            assert _read_response(sock).startswith(b"HTTP/1.1 200 ")
        with _connect(server) as extra:
            status, headers, body = _reply(_read_all(extra))
        assert (status, headers["retry-after"]) == (503, "1")
        assert body["error"]["code"] == "too_many_connections"
        assert "3 connections open, its limit" in body["error"]["message"]
    finally:
        for sock in held:
            sock.close()
    _served_again(server)  # their places are free again once they are closed


def _served_again(server: ApiThread) -> None:
    """A new connection is served within 5 s (a place given up is free again)."""
    deadline = time.monotonic() + 5
    statuses = []
    while b"200" not in statuses and time.monotonic() < deadline:
        with _connect(server) as sock:
            sock.sendall(GET_HEALTH)
            statuses.append(_read_response(sock).split(b" ")[1])
    assert statuses[-1] == b"200", statuses


def test_one_address_holds_at_most_its_share_of_the_connections() -> None:
    """Of 8 connections, one address holds at most 2 (a quarter): its third is 503 and
    closed as it opens, while another address (127.0.0.2) is still served; a place the
    address gives up is its own again. One address held every connection before (a client
    trickling 1,030 bodies left the others 503s)."""
    server = ApiThread(_app(), "127.0.0.1", head_timeout_s=30.0, max_connections=8).start()
    try:
        held = [_connect(server) for _ in range(2)]
        with _connect(server) as extra:
            status, headers, body = _reply(_read_all(extra))
        assert (status, headers["retry-after"]) == (503, "1")
        assert body["error"]["message"] == (
            "this endpoint has 2 connections open from 127.0.0.1, the most one address may "
            "hold; retry after 1s"
        )
        assert body["error"]["code"] == "too_many_connections"
        other = socket.create_connection(("127.0.0.1", server.port), 10, ("127.0.0.2", 0))
        with other:
            other.sendall(GET_HEALTH)
            assert _read_response(other).startswith(b"HTTP/1.1 200 ")
        held.pop().close()
        _served_again(server)
        held.pop().close()
    finally:
        server.stop()


POST_HEAD = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


@pytest.mark.parametrize(
    ("request_bytes", "status", "reason"),
    [
        (b"NOT HTTP AT ALL\r\n\r\n", 400, "illegal request line: 'NOT HTTP AT ALL'"),
        (b"GET /health\r\n\r\n", 400, "illegal request line: 'GET /health'"),
        (b"G\xc3\xa9T\x00 \xff\r\n\r\n", 400, "illegal request line: 'G\u00e9T\\x00 \\xff'"),
        (b"A" * 500 + b"\r\n\r\n", 400, f"illegal request line: '{'A' * 47}\u2026'"),
        (b"GET /health HTTP/1.1\r\n\r\n", 400, "Missing mandatory Host: header"),
        (f"{POST_HEAD}Content-Length: -1\r\n\r\n".encode(), 400, "bad Content-Length"),
        (f"{POST_HEAD}Content-Length: +5\r\n\r\n{{}}{{}}{{".encode(), 400, "bad Content-Length"),
        (f"{POST_HEAD}Transfer-Encoding: identity\r\n\r\n{{}}".encode(), 501,
         "Only Transfer-Encoding: chunked is supported"),
        (f"{POST_HEAD}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n".encode(), 501,
         "Only Transfer-Encoding: chunked is supported"),
    ],
)  # fmt: skip
def test_malformed_http_is_an_openai_error_giving_h11s_reason(
    server: ApiThread, request_bytes: bytes, status: int, reason: str
) -> None:
    """Each got the same "invalid HTTP request: Invalid HTTP request received." before;
    then h11's reason held a Python repr (``bytearray(b'GET /health')``)."""
    with _connect(server) as sock:
        sock.sendall(request_bytes)
        got, headers, body = _reply(_read_all(sock))
    assert (got, headers["content-type"], headers["connection"]) == (
        status, "application/json", "close")  # fmt: skip
    assert body["error"]["code"] == "invalid_http"
    assert body["error"]["message"] == f"invalid HTTP request: {reason}"


def _head_of(size: int) -> bytes:
    """A GET /health head of exactly ``size`` bytes."""
    start, end = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: ", b"\r\n\r\n"
    return start + b"a" * (size - len(start) - len(end)) + end


def test_a_request_head_over_16_kib_is_431_whether_whole_or_not(server: ApiThread) -> None:
    """h11 bounded only a head still incomplete: 64 KiB sent at once were answered 200."""
    with _connect(server) as sock:
        sock.sendall(_head_of(MAX_HEAD_BYTES))
        assert _read_response(sock).startswith(b"HTTP/1.1 200 ")
    for size, told in ((MAX_HEAD_BYTES + 1, "16385"), (64 << 10, "65536")):
        with _connect(server) as sock:
            sock.sendall(_head_of(size))
            status, headers, body = _reply(_read_all(sock))
        assert (status, headers["connection"]) == (431, "close")
        assert body["error"] == {"message": f"the request head is {told} bytes, over the "
                                 "limit of 16384", "type": "invalid_request_error",
                                 "param": None, "code": "request_head_too_large"}  # fmt: skip
    with _connect(server) as sock:  # never whole: h11's own bound, the same answer
        sock.sendall(_head_of(64 << 10)[:20000])
        status, _, body = _reply(_read_all(sock))
    message = "the request head is over the limit of 16384 bytes"  # said "more than 16384"
    assert (status, body["error"]["message"]) == (431, message)


def test_a_body_length_declared_twice_is_400_and_closed(server: ApiThread) -> None:
    """Content-Length beside Transfer-Encoding: chunked was read as chunked; a proxy in front
    reading the Content-Length would see another request boundary (request smuggling)."""
    with _connect(server) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                     b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
                     b"2\r\n{}\r\n0\r\n\r\n")  # fmt: skip
        status, headers, body = _reply(_read_all(sock))
    assert (status, headers["connection"]) == (400, "close")
    assert body["error"]["message"] == (
        "a request may declare its body's length by Content-Length or by Transfer-Encoding, "
        "not both"
    )


def test_raw_response_and_bounds() -> None:
    raw = raw_response(ApiError(503, "busy", code="x", retry_after_s=1))
    status, headers, body = _reply(raw)
    assert (status, headers["retry-after"], headers["content-length"]) == (503, "1", "83")
    assert body == {"error": {"message": "busy", "type": "invalid_request_error",
                              "param": None, "code": "x"}}  # fmt: skip
    with pytest.raises(ValueError, match="head_timeout_s > 0"):
        bounded_protocol(0.0, 10)
