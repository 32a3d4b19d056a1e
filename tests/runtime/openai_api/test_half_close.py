"""A client that sends its whole request and then half-closes its socket
(``shutdown(SHUT_WR)``, as HTTP/1.1 allows) gets its answer, as one that keeps its socket
open would, and the connection is closed after it. uvicorn took the end of the stream for
the client gone and dropped the response: these clients read nothing. A request cut short
by the half-close is still closed at once, unanswered."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import h11
import pytest

from edgespec.runtime.openai_api.serve import ApiThread
from tests.runtime.openai_api.conftest import MODEL


def _http(head: str, body: dict[str, Any] | None, close: bool) -> bytes:
    """A request: ``head`` (its request line), a JSON ``body`` if any, and with ``close``
    a ``Connection: close`` (the server then closes after its answer)."""
    data = b"" if body is None else json.dumps(body).encode()
    headers = ["Host: x"]
    if body is not None:
        headers += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    if close:
        headers.append("Connection: close")
    return f"{head}\r\n{''.join(h + chr(13) + chr(10) for h in headers)}\r\n".encode() + data


def _exchange(api: ApiThread, request: bytes, half_close: bool) -> bytes:
    """Send ``request``, half-closing after it or not; all until the server closes."""
    with socket.create_connection(("127.0.0.1", api.port), timeout=30) as sock:
        sock.sendall(request)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


def _parsed(raw: bytes) -> tuple[int, bytes]:
    """The status and (dechunked) body of the one response in ``raw``, read by h11."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(raw)
    conn.receive_data(b"")
    status, body = 0, b""
    while not isinstance(event := conn.next_event(), h11.EndOfMessage):
        assert event is not h11.NEED_DATA, f"a response cut short: {raw!r}"
        if isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            body += event.data
    return status, body


def _answer(raw: bytes) -> tuple[int, Any]:
    """The status and the JSON body less what differs between two answers (ids, times)."""
    status, body = _parsed(raw)
    decoded = json.loads(body)
    for name in ("id", "created"):
        decoded.pop(name, None)
    return status, decoded


COMPLETION = {"model": MODEL, "prompt": "w1 w2", "max_tokens": 4}
CHAT = {"model": MODEL, "max_tokens": 4, "messages": [{"role": "user", "content": "w3"}]}
REQUESTS: dict[str, tuple[str, dict[str, Any] | None]] = {
    "models": ("GET /v1/models HTTP/1.1", None),
    "completion": ("POST /v1/completions HTTP/1.1", COMPLETION),
    "bad field": ("POST /v1/completions HTTP/1.1", {**COMPLETION, "temperature": 5}),
    "chat": ("POST /v1/chat/completions HTTP/1.1", CHAT),
    "HTTP/1.0": ("POST /v1/completions HTTP/1.0", COMPLETION),  # printf ... | nc -N
}


@pytest.mark.parametrize("name", list(REQUESTS))
def test_a_half_closed_request_gets_the_answer_an_open_one_gets(api: ApiThread, name: str) -> None:
    head, body = REQUESTS[name]
    status, answer = _answer(_exchange(api, _http(head, body, False), half_close=True))
    assert (status, answer) == _answer(_exchange(api, _http(head, body, True), half_close=False))
    assert status == (400 if name == "bad field" else 200)


def test_a_half_closed_stream_is_streamed_whole(api: ApiThread) -> None:
    streamed = _http("POST /v1/completions HTTP/1.1", {**COMPLETION, "stream": True}, False)
    status, events = _parsed(_exchange(api, streamed, half_close=True))
    assert status == 200 and events.endswith(b"data: [DONE]\n\n")
    texts = [json.loads(line[6:])["choices"][0]["text"]
             for line in events.split(b"\n\n") if line.startswith(b"data: {")]  # fmt: skip
    whole = _answer(_exchange(api, _http("POST /v1/completions HTTP/1.1", COMPLETION, True),
                              half_close=False))  # fmt: skip
    assert "".join(texts) == whole[1]["choices"][0]["text"]


def test_a_request_cut_short_by_the_half_close_is_closed_unanswered(api: ApiThread) -> None:
    cut = _http("POST /v1/completions HTTP/1.1", COMPLETION, False)[:-5]  # 5 bytes short
    started = time.monotonic()
    assert _exchange(api, cut, half_close=True) == b""
    assert time.monotonic() - started < 1.0  # at once, not after a grace
