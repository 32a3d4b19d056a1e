"""Bodies over the limit are refused while they arrive, whatever their framing: a 64 MB
chunked body (no Content-Length) gets its 413 after a small part of it is sent, and the
endpoint's memory does not grow with what the client sends."""

from __future__ import annotations

import json
import select
import socket
import time
from typing import Any

from edgespec.runtime.openai_api.serve import ApiThread
from tests.runtime.openai_api.conftest import LIMITS

BODY_BYTES = 64 << 20
CHUNK_BYTES = 64 << 10


def _peak_rss_bytes() -> int:
    """This process's peak resident memory since the last :func:`_reset_peak` (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/self/status")


def _rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS


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
    _reset_peak()
    before = _rss_bytes()
    started = time.monotonic()
    sent, reply = _send_chunked(api.port, head, BODY_BYTES)
    grown = _peak_rss_bytes() - before
    status, error = _status_and_error(reply)
    assert (status, error["code"]) == (413, "request_too_large")
    assert f"over the limit of {LIMITS.max_body_bytes}" in error["message"]
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
