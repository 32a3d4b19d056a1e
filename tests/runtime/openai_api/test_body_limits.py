"""Bodies over the limit are refused while they arrive, whatever their framing: a 64 MB
chunked body (no Content-Length) gets its 413 after a small part of it is sent, and the
endpoint's memory does not grow with what the client sends."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import time
from typing import Any

import pytest

from edgespec.runtime.openai_api.serve import ApiThread
from tests.runtime.memory import peak_rss_bytes, reset_peak, rss_bytes
from tests.runtime.openai_api.conftest import LIMITS

BODY_BYTES = 64 << 20
CHUNK_BYTES = 64 << 10


def _read_reply(sock: socket.socket) -> bytes:
    sock.settimeout(30)
    reply = b""
    while b"\r\n\r\n" not in reply or not _whole(reply):
        data = sock.recv(65536)
        if not data:
            break
        reply += data
    return reply


def _whole(reply: bytes) -> bool:
    head, _, body = reply.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


def _send_chunked(port: int, head: bytes, total_bytes: int) -> tuple[int, bytes]:
    """POST ``total_bytes`` of chunked body, stopping when the server answers or closes;
    the bytes of body sent and the reply."""
    chunk = b"x" * CHUNK_BYTES
    frame = f"{CHUNK_BYTES:x}\r\n".encode() + chunk + b"\r\n"
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        while sent < total_bytes:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sock.sendall(frame)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += CHUNK_BYTES
        else:
            sock.sendall(b"0\r\n\r\n")
        return sent, _read_reply(sock)


def _status_and_error(reply: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = reply.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    return status, json.loads(body)["error"]


def test_chunked_body_is_refused_while_it_arrives_memory_flat(api: ApiThread) -> None:
    head = (
        b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    reset_peak()
    before = rss_bytes()
    started = time.monotonic()
    sent, reply = _send_chunked(api.port, head, BODY_BYTES)
    grown = peak_rss_bytes() - before
    status, error = _status_and_error(reply)
    assert (status, error["code"]) == (413, "request_too_large")
    assert error["message"] == (
        f"request body is over the limit of {LIMITS.max_body_bytes} bytes "
        "(--openai-max-body-bytes), sent chunked"
    )
    assert grown < 16 << 20, f"peak memory grew {grown >> 20} MiB during the request"
    assert sent < BODY_BYTES // 8, f"the 413 came after {sent} of {BODY_BYTES} bytes"
    assert time.monotonic() - started < 30


def test_a_short_content_length_cannot_smuggle_a_larger_body(api: ApiThread) -> None:
    """A Content-Length under the limit, then more bytes than it said: only the declared
    bytes are the body (here not JSON: a 400), the rest never counted as one."""
    body = b'{"model": "tiny", "prompt": "w1"}' + b" " * 100_000
    head = (
        b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: 10\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", api.port), timeout=30) as sock:
        sock.sendall(head + body[:200])
        status, error = _status_and_error(_read_reply(sock))
    assert (status, error["code"]) == (400, "invalid_json")


def _request(headers: list[tuple[bytes, bytes]], chunks: list[bytes], stall: bool) -> Any:
    """A request whose body arrives as ``chunks``, then (``stall``) nothing more."""
    from starlette.requests import Request

    pending = list(chunks)

    async def receive() -> dict[str, Any]:
        if pending:
            return {"type": "http.request", "body": pending.pop(0), "more_body": True}
        if stall:
            await asyncio.sleep(3600)
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/", "headers": headers}
    return Request(scope, receive)


def test_a_slow_sender_gets_408_and_a_declared_length_over_the_limit_413() -> None:
    from edgespec.runtime.openai_api.body import read_body
    from edgespec.runtime.openai_api.errors import ApiError

    slow = _request([], [b"{", b"  "], stall=True)
    with pytest.raises(ApiError) as info:
        asyncio.run(read_body(slow, 4096, timeout_s=0.2))
    assert (info.value.status, info.value.code) == (408, "request_timeout")
    assert info.value.message == "the request body was not received within 0.2 s"
    declared = _request([(b"content-length", b"5000")], [b"{}"], stall=True)
    with pytest.raises(ApiError) as info:
        asyncio.run(read_body(declared, 4096, timeout_s=0.2))
    assert (info.value.status, info.value.code) == (413, "request_too_large")
    assert (
        info.value.message
        == "request body is 5000 bytes, over the limit of 4096 (--openai-max-body-bytes)"
    )
    chunked = _request([], [b"{" + b" " * 3000, b" " * 3000], stall=True)
    with pytest.raises(ApiError) as info:  # said "is more than 4096 bytes, over the limit"
        asyncio.run(read_body(chunked, 4096, timeout_s=5))
    assert (info.value.status, info.value.code) == (413, "request_too_large")
    assert (
        info.value.message
        == "request body is over the limit of 4096 bytes (--openai-max-body-bytes), sent chunked"
    )
    whole = _request([], [b'{"a":', b" 1}"], stall=False)
    assert asyncio.run(read_body(whole, 4096)) == b'{"a": 1}'
