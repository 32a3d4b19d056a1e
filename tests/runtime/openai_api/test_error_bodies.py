"""Every error body the endpoint sends has one serialisation, byte for byte: those written
before the app (408, 431, 503, malformed HTTP: :func:`.connections.raw_response`) and the
app's own (a bad field, :func:`.app.error_response`) alike: compact JSON in UTF-8, the keys
in the same order."""

from __future__ import annotations

import json
import socket

import pytest

from edgespec.runtime.openai_api.app import error_response
from edgespec.runtime.openai_api.connections import raw_response
from edgespec.runtime.openai_api.errors import ApiError, clip, json_response
from edgespec.runtime.openai_api.http_connection import head_too_large, malformed
from edgespec.runtime.openai_api.serve import ApiThread
from tests.runtime.openai_api.conftest import MODEL

LONG = "é" * 100  # quoted cut, with an ellipsis: neither ASCII


def _exchange(api: ApiThread, request: bytes) -> tuple[int, bytes]:
    """(status, body) of the one response to ``request`` on a new connection."""
    with socket.create_connection(("127.0.0.1", api.port), timeout=30) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    assert len(body) == length
    return int(head.split()[1]), body


def _canonical(body: bytes) -> bytes:
    """``body`` serialised as the app serialises: compact, UTF-8, keys in their order."""
    return json.dumps(
        json.loads(body), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode()


def test_a_known_error_has_the_same_bytes_raw_and_from_the_app() -> None:
    """Were ``{"error": {"message": ...}}`` raw (spaces, ``\\u2026``) and compact UTF-8
    from the app."""
    error = ApiError(503, f"busy: {clip(LONG, 8)}", kind="server_error", code="x",
                     retry_after_s=1)  # fmt: skip
    expected = (
        '{"error":{"message":"busy: ééééééé…","type":"server_error","param":null,"code":"x"}}'
    ).encode()
    head = (
        b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\nconnection: close\r\n"
        b"content-length: %d\r\ncontent-type: application/json\r\n\r\n" % len(expected)
    )
    assert raw_response(error) == head + expected
    assert bytes(error_response(error).body) == expected


def test_the_app_and_the_raw_responses_are_built_by_one_function() -> None:
    """Were two ``JSONResponse`` constructions (the app's :func:`.app.error_response`, the
    raw :func:`.connections.raw_response`): status, headers (in order) and body of both are
    :func:`.errors.json_response`'s."""
    error = ApiError(429, "slow down", kind="rate_limit_error", code="busy", retry_after_s=1)
    app, built = error_response(error, {"Allow": "GET"}), json_response(error, {"Allow": "GET"})
    assert (app.status_code, app.raw_headers, bytes(app.body)) == (
        built.status_code,
        built.raw_headers,
        bytes(built.body),
    )
    assert built.raw_headers[:2] == [(b"retry-after", b"1"), (b"allow", b"GET")]
    closing = json_response(error, {"Connection": "close"})
    fields = b"".join(name + b": " + value + b"\r\n" for name, value in closing.raw_headers)
    head = b"HTTP/1.1 429 Too Many Requests\r\n" + fields + b"\r\n"
    assert raw_response(error) == head + bytes(closing.body)


@pytest.mark.parametrize(
    "error",
    [
        head_too_large(16385, 16384),
        malformed(f"illegal request line: {LONG}"),
        ApiError(408, "the request head was not received within 10 s", code="request_timeout"),
    ],
    ids=["431", "400-invalid-http", "408"],
)
def test_each_raw_error_body_is_the_apps_serialisation(error: ApiError) -> None:
    body = raw_response(error).partition(b"\r\n\r\n")[2]
    assert body == bytes(error_response(error).body) == _canonical(body)


def test_raw_and_app_error_bodies_on_the_wire_have_one_format(api: ApiThread) -> None:
    """A 431 and a malformed request line (before the app) and a bad field (the app's)."""
    field = json.dumps({"model": MODEL, "prompt": "w1", "stream": LONG}).encode()
    app_status, app_body = _exchange(api, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                     b"Content-Type: application/json\r\nContent-Length: %d"
                                     b"\r\n\r\n%s" % (len(field), field))  # fmt: skip
    big_status, big_body = _exchange(api, b"GET /health HTTP/1.1\r\nX-Pad: " + b"a" * 20000)
    bad_status, bad_body = _exchange(api, b"GET /" + LONG.encode() + b" x y HTTP/1.1\r\n\r\n")
    assert (app_status, big_status, bad_status) == (400, 431, 400)
    assert big_body == (
        b'{"error":{"message":"the request head is over the limit of 16384 bytes",'
        b'"type":"invalid_request_error","param":null,"code":"request_head_too_large"}}'
    )
    shown = '\\"' + "é" * 78 + "…"  # JSON's string quote, escaped in the body's JSON
    expected = (
        '{"error":{"message":"stream must be a boolean, got ' + shown + '","type":'
        '"invalid_request_error","param":"stream","code":null}}'
    )
    assert app_body == expected.encode()
    assert "…".encode() in bad_body
    for body in (app_body, big_body, bad_body):
        assert body == _canonical(body)
        assert list(json.loads(body)["error"]) == ["message", "type", "param", "code"]


def test_a_stream_event_is_rendered_as_every_other_body() -> None:
    """Was json.dumps: spaces after separators and non-ASCII text as \\u escapes."""
    from edgespec.runtime.openai_api.streaming import event

    body = {"object": "text_completion", "choices": [{"index": 0, "text": "naïve …"}]}
    assert event(body) == (
        'data: {"object":"text_completion","choices":[{"index":0,"text":"naïve …"}]}\n\n'
    )
