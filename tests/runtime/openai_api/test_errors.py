"""Refusals in the OpenAI error shape with the right HTTP status: bad JSON, unknown model,
oversized body or prompt, bad fields, no chat template, unknown routes, and a verification
server that cannot be reached (503 with ``Retry-After``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_server import ServerThread
from tests.runtime.openai_api.conftest import MODEL, endpoint, free_port, word_tokenizer


def _post(api: ApiThread, path: str, data: bytes) -> tuple[int, dict[str, Any], Any]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{api.port}{path}", data=data,
        headers={"Content-Type": "application/json"}, method="POST",
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), exc.headers


def _error(api: ApiThread, body: Any, path: str = "/v1/completions") -> tuple[int, dict[str, Any]]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    status, reply, _ = _post(api, path, raw)
    assert set(reply) == {"error"}
    assert set(reply["error"]) == {"message", "type", "param", "code"}
    return status, reply["error"]


def test_bad_json_is_400(api: ApiThread) -> None:
    status, error = _error(api, b'{"model": "tiny", "prompt": ')
    assert (status, error["type"], error["code"]) == (400, "invalid_request_error", "invalid_json")
    assert "not valid JSON" in error["message"]


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b'{"x": ' + b"[" * 1500 + b"]" * 1500 + b"}", "nested too deeply"),  # was a 500
        (b'{"model": "tiny", "prompt": "\\ud800 w1"}', "surrogates not allowed"),  # was a 500
    ],
    ids=["deep", "lone-surrogate"],
)
def test_json_python_cannot_take_is_400_invalid_json(api: ApiThread, raw: bytes, says: str) -> None:
    status, error = _error(api, raw)
    assert (status, error["code"]) == (400, "invalid_json")
    assert says in error["message"]


def test_an_integer_of_more_digits_than_python_converts_is_invalid_json() -> None:
    from edgespec.runtime.openai_api.errors import ApiError
    from edgespec.runtime.openai_api.schema import decode_body

    with pytest.raises(ApiError) as info:  # over this fixture's 4 KiB body: decoded directly
        decode_body(b'{"model": "tiny", "max_tokens": ' + b"9" * 5000 + b"}")
    assert info.value.code == "invalid_json"  # was "the drafter refused the request: ..."
    assert "integer string" in info.value.message


def test_a_window_parameter_cannot_name_a_file_on_the_device(api: ApiThread) -> None:
    window = {"name": "awc", "params": {"file": "/etc/passwd"}}
    status, error = _error(api, {"model": MODEL, "prompt": "w1", "edgespec": {"window": window}})
    assert (status, error["param"]) == (400, "edgespec.window")
    assert error["message"] == (  # before: "/etc/passwd: not JSON: ..." - the file was read
        "edgespec.window.params.file: a request's window parameters are finite numbers or "
        "booleans, got '/etc/passwd'"
    )


@pytest.mark.parametrize(
    "media", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
)
def test_a_body_that_does_not_say_it_is_json_is_415(api: ApiThread, media: str) -> None:
    """What a web page may POST cross-site without a preflight starts no generation."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{api.port}/v1/completions", method="POST",
        data=json.dumps({"model": MODEL, "prompt": "w1", "max_tokens": 2}).encode(),
        headers={"Content-Type": media},
    )  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=30)
    error = json.loads(info.value.read())["error"]
    assert (info.value.code, error["code"]) == (415, "unsupported_media_type")


def test_unsupported_fields_at_their_defaults_are_fine(api: ApiThread) -> None:
    body = {"model": MODEL, "prompt": "w1", "max_tokens": 2, "presence_penalty": 0.0,
            "frequency_penalty": 0, "logit_bias": {}, "tool_choice": "none", "logprobs": None,
            "response_format": {"type": "text"}, "n": 1, "echo": False}  # fmt: skip
    status, reply, _ = _post(api, "/v1/completions", json.dumps(body).encode())
    assert status == 200, reply


def test_chat_takes_logprobs_false_as_off(api: ApiThread) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "w1"}], "max_tokens": 2}
    status, reply, _ = _post(
        api, "/v1/chat/completions", json.dumps(body | {"logprobs": False}).encode()
    )
    assert status == 200 and reply["choices"][0]["finish_reason"] in ("stop", "length")


def test_unknown_model_is_404(client: Any) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        client.completions.create(model="gpt-9", prompt="w1", max_tokens=2)
    body: Any = info.value.body
    assert body["code"] == "model_not_found"
    assert "'gpt-9' does not exist; this endpoint serves 'tiny'" in body["message"]


def test_oversized_body_is_413_and_long_prompt_400(api: ApiThread) -> None:
    status, error = _error(api, {"model": MODEL, "prompt": "w1 " * 2000})
    assert (status, error["code"]) == (413, "request_too_large")
    status, error = _error(api, {"model": MODEL, "prompt": "w1 " * 65})
    assert (status, error["code"], error["param"]) == (400, "context_length_exceeded", "prompt")
    assert "65 tokens, over the limit of 64" in error["message"]


@pytest.mark.parametrize(
    ("field", "value", "param"),
    [
        ("max_tokens", 0, "max_tokens"),
        ("max_tokens", 5000, "max_tokens"),
        ("temperature", -1, "temperature"),
        ("top_p", 1.5, "top_p"),  # OpenAI's [0, 1]: 0 is greedy, -0.1 a 400 (test_endpoint)
        ("stop", ["a", "b", "c", "d", "e"], "stop"),
        ("n", 2, "n"),
        ("seed", -1, "seed"),
        ("prompt", ["w1", "w2"], "prompt"),
        ("prompt", [99], "prompt"),
        ("edgespec", {"window": "nonesuch"}, "edgespec.window"),
        ("edgespec", {"slo": "x"}, "edgespec"),
        ("stop", "x" * 257, "stop"),  # held-back prefixes cost its length squared per token
        ("n", True, "n"),  # True == 1, but not the default
        ("presence_penalty", 0.5, "presence_penalty"),  # ignored before: refused, not ignored
        ("logit_bias", {"5": 10}, "logit_bias"),
        ("response_format", {"type": "json_object"}, "response_format"),
        ("tools", [{"type": "function"}], "tools"),
        ("echo", 0, "echo"),
        (  # a string could name a file on the device: awc would read it whole
            "edgespec",
            {"window": {"name": "awc", "params": {"file": "/etc/passwd"}}},
            "edgespec.window",
        ),
        (  # a decision per γ: 10^7 of them took a gigabyte
            "edgespec",
            {"window": {"name": "dynamic", "params": {"max_gamma": 10**7}}},
            "edgespec.window",
        ),
    ],
)
def test_bad_field_is_400_naming_it(api: ApiThread, field: str, value: Any, param: str) -> None:
    status, error = _error(api, {"model": MODEL, "prompt": "w1", field: value})
    assert (status, error["param"]) == (400, param), error["message"]


@pytest.mark.parametrize("field", ["temperature", "top_p"])
def test_a_value_above_0_the_wire_cannot_carry_is_400(api: ApiThread, field: str) -> None:
    """1e-50 reached the server as 0: greedy for a temperature, unset (1) for a top_p."""
    status, error = _error(api, {"model": MODEL, "prompt": "w1", field: 1e-50})
    assert (status, error["param"]) == (400, field)
    assert error["message"] == (
        f"{field} must not be below 1.175e-38 unless 0 (the wire's float32), got 1e-50"
    )


def test_chat_takes_max_completion_tokens_or_max_tokens(client: Any) -> None:
    """A null max_completion_tokens beside max_tokens once meant the default (64 here)."""
    messages = [{"role": "user", "content": "w1 w2"}]
    for fields in (
        {"max_tokens": 3, "max_completion_tokens": None},
        {"max_completion_tokens": 3},
        {"max_tokens": 3, "max_completion_tokens": 3},
    ):
        out = client.chat.completions.create(model=MODEL, messages=messages, extra_body=fields)
        assert out.usage.completion_tokens == 3, fields


def test_chat_max_tokens_that_differ_are_400(api: ApiThread) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "w1"}], "max_tokens": 5000,
            "max_completion_tokens": 3}  # fmt: skip
    status, error = _error(api, body, path="/v1/chat/completions")
    assert (status, error["param"]) == (400, "max_completion_tokens")
    assert error["message"] == "max_completion_tokens (3) and max_tokens (5000) differ: give one"


def test_edgespec_extension_is_accepted(client: Any) -> None:
    out = client.completions.create(
        model=MODEL, prompt="w1", max_tokens=4,
        extra_body={"edgespec": {"slo_class": "interactive",
                                 "window": {"name": "static", "params": {"gamma": 2}}}},
    )  # fmt: skip
    assert out.usage.completion_tokens == 4


def test_unknown_route_is_an_openai_404(api: ApiThread) -> None:
    status, error = _error(api, {}, path="/v1/embeddings")
    assert status == 404
    assert "POST /v1/embeddings" in error["message"]


def test_a_wrong_method_is_an_openai_405_with_allow(api: ApiThread) -> None:
    """The 405 once dropped the Allow header starlette gives it."""
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{api.port}/v1/completions", timeout=30)
        raise AssertionError("GET /v1/completions was answered")
    except urllib.error.HTTPError as exc:
        status, headers, reply = exc.code, exc.headers, json.loads(exc.read())
    assert (status, headers["Allow"]) == (405, "POST")
    assert reply["error"]["message"] == "GET /v1/completions: Method Not Allowed"


@pytest.fixture
def no_template(grpc_server: ServerThread, draft_model: Any) -> Iterator[ApiThread]:
    tokenizer = word_tokenizer(64, chat=False)
    running = endpoint(f"127.0.0.1:{grpc_server.port}", draft_model, tokenizer)
    yield running
    running.stop()


def test_chat_without_a_chat_template_is_400(no_template: ApiThread) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "w1"}]}
    status, error = _error(no_template, body, path="/v1/chat/completions")
    assert (status, error["code"]) == (400, "chat_template_missing")


@pytest.fixture
def unreachable(draft_model: Any) -> Iterator[ApiThread]:
    running = endpoint(f"127.0.0.1:{free_port()}", draft_model, word_tokenizer(64))
    yield running
    running.stop()


@pytest.mark.parametrize("stream", [False, True])
def test_unreachable_server_is_503_with_retry_after(unreachable: ApiThread, stream: bool) -> None:
    body = {"model": MODEL, "prompt": "w1", "max_tokens": 4, "stream": stream}
    status, reply, headers = _post(unreachable, "/v1/completions", json.dumps(body).encode())
    assert status == 503
    assert headers["Retry-After"] == "1"
    assert reply["error"]["type"] == "server_error"
    assert "verification server is unreachable" in reply["error"]["message"]


@pytest.fixture
def small_messages(grpc_server: ServerThread, draft_model: Any) -> Iterator[ApiThread]:
    address = f"127.0.0.1:{grpc_server.port}"
    running = endpoint(address, draft_model, word_tokenizer(64), max_message_bytes=300)
    yield running
    running.stop()


def test_a_draft_block_over_the_message_limit_is_400_and_not_retried(
    small_messages: ApiThread,
) -> None:
    """The drafter measures its message before sending: a 400 the openai client does not
    retry (gRPC's own refusal would be RESOURCE_EXHAUSTED, a 429 it retries by itself)."""
    client = openai.OpenAI(
        base_url=f"http://127.0.0.1:{small_messages.port}/v1", api_key="unused", timeout=60
    )
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model=MODEL, prompt="w1 w2", max_tokens=8, temperature=0.8)
    message = str(info.value)
    assert "over this client's gRPC message limit of 300 bytes" in message
    assert "draft fewer tokens per round (--gamma)" in message


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--serve-openai", "nowhere"], "--serve-openai: expected HOST:PORT"),
        (["--serve-openai", "127.0.0.1:0", "--mode", "centralized"], "drop --mode centralized"),
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
    """``--openai-max-*`` set what the endpoint refuses (the endpoint replaced by a recorder:
    the limits themselves are tested on the app above)."""
    from edgespec.cli import main
    from edgespec.runtime.commands import draft as draft_command
    from edgespec.runtime.openai_api import serve
    from edgespec.runtime.openai_api.admission import Concurrency
    from edgespec.runtime.openai_api.schema import Limits

    seen: list[Limits] = []
    admits: list[Concurrency] = []
    monkeypatch.setattr(draft_command, "_tokenizer", lambda *a, **k: word_tokenizer(64))

    def record(*args: Any, concurrency: Concurrency) -> int:
        seen.append(args[-1])
        admits.append(concurrency)
        return 0

    monkeypatch.setattr(serve, "serve_openai", record)
    argv = ["draft", "--server", f"127.0.0.1:{grpc_server.port}", "--draft", "ngram",
            "--serve-openai", "127.0.0.1:0"]  # fmt: skip
    assert main(argv) == 0
    assert main([*argv, "--openai-max-body-bytes", "1000", "--openai-max-prompt-tokens", "9",
                 "--openai-max-tokens", "7", "--max-new-tokens", "7",
                 "--openai-max-concurrent", "3", "--openai-max-queued", "0"]) == 0  # fmt: skip
    assert seen == [Limits(), Limits(1000, 9, 7)]
    assert admits == [Concurrency.for_device(), Concurrency(3, 0)]
