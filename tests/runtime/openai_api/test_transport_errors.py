"""Refusals of the endpoint's routes and of its verification server, in the OpenAI error
shape: an unknown route 404, a wrong method 405 with ``Allow``; a verification server that
cannot be reached 503 with ``Retry-After``, a draft block over the gRPC message limit 400;
the ``--serve-openai`` flags refused, and the limit flags reaching the endpoint. A body's
shape: :mod:`.test_request_shape`."""

from __future__ import annotations

import http.client
import json
import re
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from edgespec.runtime.openai_api.errors import clip
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.openai_api.conftest import (
    MODEL,
    _error,
    _post,
    endpoint,
    free_port,
    word_tokenizer,
)


def test_unknown_route_is_an_openai_404(api: ApiThread) -> None:
    status, error = _error(api, {}, path="/v1/embeddings")
    assert status == 404
    assert "POST /v1/embeddings" in error["message"]


def test_a_long_unknown_path_is_quoted_clipped(api: ApiThread) -> None:
    """The 404 echoed the whole path (15,000 characters came back; every other message
    clips what a client sent)."""
    path = "/" + "x" * 15_000
    status, error = _error(api, {}, path=path)
    assert status == 404
    assert error["message"] == f"POST {clip(path)}: Not Found"
    assert len(error["message"]) < 120


def test_a_wrong_method_is_an_openai_405_with_allow(api: ApiThread) -> None:
    """The 405 once dropped the Allow header starlette gives it."""
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{api.port}/v1/completions", timeout=30)
        raise AssertionError("GET /v1/completions was answered")
    except urllib.error.HTTPError as exc:
        status, headers, reply = exc.code, exc.headers, json.loads(exc.read())
    assert (status, headers["Allow"]) == (405, "POST")
    assert reply["error"]["message"] == "GET /v1/completions: Method Not Allowed"


def _answer(conn: http.client.HTTPConnection, method: str, path: str) -> tuple[int, Any, bytes]:
    """``method path`` on ``conn``: the status, the headers less ``date``, the body."""
    conn.request(method, path)
    response = conn.getresponse()
    body = response.read()
    return response.status, [h for h in response.getheaders() if h[0] != "date"], body


def _ready(conn: http.client.HTTPConnection, timeout_s: float = 30.0) -> None:
    """``/ready`` asked on ``conn`` until it answers 200 (its first probe landed)."""
    deadline = time.monotonic() + timeout_s
    while _answer(conn, "GET", "/ready")[0] != 200:
        assert time.monotonic() < deadline, f"/ready not 200 within {timeout_s} s"
        time.sleep(0.1)


@pytest.mark.parametrize(
    "path",
    ["/v1/models", f"/v1/models/{MODEL}", "/v1/models/gpt-9", "/health", "/ready", "/metrics"],
)
def test_head_is_answered_as_get_without_the_body(api: ApiThread, path: str) -> None:
    """HEAD was a 405 on every route (FastAPI's ``app.get`` routes GET alone): RFC 9110
    answers it as the GET, status and headers (Content-Length too), with no body."""
    conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=30)
    try:
        _ready(conn)  # the server's state known: no probe lands between GET and HEAD
        status, headers, body = _answer(conn, "GET", path)
        assert status == (404 if path.endswith("gpt-9") else 200)
        assert ("content-length", str(len(body))) in headers
        assert _answer(conn, "HEAD", path) == (status, headers, b"")
        # the same connection: a body sent after the HEAD's head would be read as this head
        assert _answer(conn, "GET", path) == (status, headers, body)
    finally:
        conn.close()


def test_a_wrong_method_on_a_get_route_allows_get_and_head(api: ApiThread) -> None:
    status, reply, headers = _post(api, "/v1/models", b"{}")
    assert (status, reply["error"]["message"]) == (405, "POST /v1/models: Method Not Allowed")
    assert sorted(headers["Allow"].split(", ")) == ["GET", "HEAD"]


RETRY_TIMEOUT_S = 0.5
"""How long the endpoint below retries a server that cannot be reached (30 s by default)."""


@pytest.fixture
def unreachable(draft_model: Any) -> Iterator[ApiThread]:
    address = f"127.0.0.1:{free_port()}"
    running = endpoint(address, draft_model, word_tokenizer(64), retry_timeout_s=RETRY_TIMEOUT_S)
    yield running
    running.stop()


@pytest.mark.parametrize("stream", [False, True])
def test_unreachable_server_is_503_with_retry_after(unreachable: ApiThread, stream: bool) -> None:
    """After retrying for ``retry_timeout_s`` (it was a 503 at once, while a request already
    running waited out the same outage): a server that comes back within it,
    :mod:`.test_unreachable_at_open`."""
    body = {"model": MODEL, "prompt": "w1", "max_tokens": 4, "stream": stream}
    start = time.monotonic()
    status, reply, headers = _post(unreachable, "/v1/completions", json.dumps(body).encode())
    took = time.monotonic() - start
    assert (status, headers["Retry-After"]) == (503, "1")
    assert (reply["error"]["type"], reply["error"]["code"]) == ("server_error", "unavailable")
    message = reply["error"]["message"]
    assert message.startswith("the verification server is unreachable: "), message
    assert message.endswith("; retry after 1s"), message
    assert RETRY_TIMEOUT_S <= took < RETRY_TIMEOUT_S + 5


def _limited(server: ServerThread, draft_model: Any, max_message_bytes: int) -> Iterator[ApiThread]:
    """An endpoint whose gRPC limit is ``max_message_bytes``, below its server's (4 MiB)."""
    address = f"127.0.0.1:{server.port}"
    running = endpoint(address, draft_model, word_tokenizer(64),
                       max_message_bytes=max_message_bytes)  # fmt: skip
    yield running
    running.stop()


@pytest.fixture
def small_messages(grpc_server: ServerThread, draft_model: Any) -> Iterator[ApiThread]:
    yield from _limited(grpc_server, draft_model, 300)


def test_a_draft_block_over_the_message_limit_is_400_and_not_retried(
    small_messages: ApiThread,
) -> None:
    """The drafter measures its message before sending: a 400 the openai client does not
    retry (gRPC's own refusal would be RESOURCE_EXHAUSTED, a 429 it retries by itself).
    At temperature 1.5 a block's draft support is wide (969 bytes at the least over 60
    seeds); at 0.8 some blocks came under 300 bytes (283), and a run of them answered 200."""
    client = openai.OpenAI(
        base_url=f"http://127.0.0.1:{small_messages.port}/v1", api_key="unused", timeout=60
    )
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=8, temperature=1.5)
    message = str(info.value)
    assert "over this client's gRPC message limit of 300 bytes" in message
    assert "draft fewer tokens per round (--gamma)" in message


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--serve-openai", "nowhere"], "--serve-openai: expected HOST:PORT"),
        (["--serve-openai", "127.0.0.1:0", "--mode", "fused"], "not fused: drop --mode fused"),
        (["--serve-openai", "127.0.0.1:0", "--compare"], "--compare is for one prompt"),
    ],
)
def test_draft_serve_openai_flag_errors(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgespec.cli import main

    assert main(["draft", "--server", "127.0.0.1:1", "--draft", "ngram", *extra]) == 2
    assert message in capsys.readouterr().err


def test_the_limit_flags_reach_the_endpoint(
    grpc_server: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--openai-max-*`` set what the endpoint refuses, ``--retry-timeout-s`` how long its
    requests wait for a server that cannot be reached (the endpoint replaced by a recorder:
    the limits themselves are tested on the app above, the retries in
    :mod:`.test_unreachable_at_open`)."""
    from edgespec.cli import main
    from edgespec.runtime.commands import draft as draft_command
    from edgespec.runtime.openai_api import serve
    from edgespec.runtime.openai_api.admission import Concurrency
    from edgespec.runtime.openai_api.schema import Limits
    from edgespec.runtime.openai_api.stopping import Stopped

    seen: list[Limits] = []
    admits: list[Concurrency] = []
    retries: list[float] = []
    monkeypatch.setattr(draft_command, "_tokenizer", lambda *a, **k: word_tokenizer(64))

    def record(*args: Any, concurrency: Concurrency, **_: Any) -> Stopped:
        seen.append(args[-1])
        admits.append(concurrency)
        retries.append(args[1].retry_timeout_s)
        return Stopped(signal.SIGINT)  # served until Ctrl-C: exit 130

    monkeypatch.setattr(serve, "serve_openai", record)
    argv = ["draft", "--server", f"127.0.0.1:{grpc_server.port}", "--draft", "ngram",
            "--serve-openai", "127.0.0.1:0"]  # fmt: skip
    assert main(argv) == 130
    assert main([*argv, "--openai-max-body-bytes", "1000", "--openai-max-prompt-tokens", "9",
                 "--openai-max-tokens", "7", "--max-new-tokens", "7",
                 "--openai-max-concurrent", "3", "--openai-max-queued", "0",
                 "--retry-timeout-s", "2.5"]) == 130  # fmt: skip
    assert main([*argv, "--openai-max-concurrent", "3", "--openai-max-per-client", "2"]) == 130
    assert seen == [Limits(), Limits(1000, 9, 7), Limits()]
    assert admits == [Concurrency.for_device(), Concurrency(3, 0), Concurrency(3, 3, 2)]
    assert retries == [30.0, 2.5, 30.0]


@pytest.fixture
def small_replies(grpc_server: ServerThread, draft_model: Any) -> Iterator[ApiThread]:
    yield from _limited(grpc_server, draft_model, 1000)


def test_a_reply_over_the_endpoints_own_limit_is_400_naming_that_limit(
    small_replies: ApiThread,
) -> None:
    """A first reply carrying a long prompt's log-probabilities fits the server's limit, not
    the endpoint's: gRPC fails it on receipt as RESOURCE_EXHAUSTED, which was a 429
    rate_limit_error with Retry-After, "the verification server refused the request": a
    client retried it for ever, each retry a whole prompt pass on the server."""
    body = {"model": MODEL, "prompt": " ".join(["w5"] * 60), "max_tokens": 2, "echo": True,
            "logprobs": 5}  # fmt: skip
    status, reply, headers = _post(small_replies, "/v1/completions", json.dumps(body).encode())
    error = reply["error"]
    assert (status, error["type"], error["code"]) == (400, "invalid_request_error",
                                                      "reply_too_large")  # fmt: skip
    assert "Retry-After" not in headers
    assert re.fullmatch(
        r"the verification server's reply is [\d,]+ bytes, over the client's gRPC message "
        r"limit of 1,000 \(edgespec draft --max-message-bytes; the server's max_message_bytes "
        r"is higher\): set the two alike, or ask for a smaller reply \(a shorter prompt, "
        r"fewer logprobs\)", error["message"]
    ), error["message"]  # fmt: skip
