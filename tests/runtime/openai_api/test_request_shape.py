"""Requests refused for their shape, in the OpenAI error shape with the right HTTP status:
a body not JSON, an unknown model, an oversized body or prompt, bad fields, a chat request
without a chat template; fields at values that change nothing are accepted. A body's media
type and encoding: :mod:`.test_body_encoding`; routes, methods, unreachable servers and
the ``--serve-openai`` flags: :mod:`.test_transport_errors`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.openai_api.conftest import MODEL, _error, _post, endpoint, word_tokenizer


def test_bad_json_is_400(api: ApiThread) -> None:
    status, error = _error(api, b'{"model": "tiny", "prompt": ')
    assert (status, error["type"], error["code"]) == (400, "invalid_request_error", "invalid_json")
    assert "not valid JSON" in error["message"]


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b'{"x": ' + b"[" * 1500 + b"]" * 1500 + b"}", "nested too deeply"),  # was a 500
    ],
    ids=["deep"],
)
def test_json_python_cannot_take_is_400_invalid_json(api: ApiThread, raw: bytes, says: str) -> None:
    status, error = _error(api, raw)
    assert (status, error["code"]) == (400, "invalid_json")
    assert says in error["message"]


@pytest.mark.parametrize(
    ("raw", "param", "where", "escape"),
    [
        (b'{"model": "tiny", "prompt": "\\ud800 w1"}', "prompt", "prompt", "ud800"),  # was a 500
        (b'{"model": "tiny", "messages": [{"role": "user", "content": "w1 \\udfff"}]}',
         "messages", "messages[0].content", "udfff"),
        (b'{"model": "tiny", "prompt": "w1", "metadata": {"\\ud83d": 1}}', "metadata",
         "a key of metadata", "ud83d"),
    ],
    ids=["prompt", "chat-content", "key"],
)  # fmt: skip
def test_a_lone_surrogate_is_named_where_it_is(
    api: ApiThread, raw: bytes, param: str, where: str, escape: str
) -> None:
    """A lone UTF-16 surrogate parses as JSON but is no text: the 400 names where it is
    (it said "'utf-8' codec can't encode character '\\ud800' in position 29: surrogates not
    allowed", a position in the server's re-encoding, not the client's body)."""
    status, error = _error(api, raw)
    assert (status, error["code"], error["param"], error["message"]) == (
        400, "invalid_json", param, f"request body is not valid JSON text: {where} holds a "
        f"lone UTF-16 surrogate (\\{escape}), which is no character",
    )  # fmt: skip


def test_an_integer_of_more_digits_than_python_converts_is_invalid_json() -> None:
    from edgespec.runtime.openai_api.errors import ApiError
    from edgespec.runtime.openai_api.schema import decode_body

    with pytest.raises(ApiError) as info:  # over this fixture's 4 KiB body: decoded directly
        decode_body(b'{"model": "tiny", "max_tokens": ' + b"9" * 5000 + b"}")
    assert info.value.code == "invalid_json"  # was "the drafter refused the request: ..."
    assert info.value.message == (  # it told the client to call sys.set_int_max_str_digits()
        "request body holds an integer of more than 4,300 digits, which no field takes"
    )


def test_a_window_parameter_cannot_name_a_file_on_the_device(api: ApiThread) -> None:
    window = {"name": "awc", "params": {"file": "/etc/passwd"}}
    status, error = _error(api, {"model": MODEL, "prompt": "w1", "edgespec": {"window": window}})
    assert (status, error["param"]) == (400, "edgespec.window")
    assert error["message"] == (  # before: "/etc/passwd: not JSON: ..." - the file was read
        "edgespec.window.params.file: a request's window parameters are finite numbers or "
        'booleans, got "/etc/passwd"'
    )


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
    assert '"gpt-9" does not exist; this endpoint serves "tiny"' in body["message"]


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
        ("n", 17, "n"),
        ("seed", -(2**63) - 1, "seed"),  # below OpenAI's int64
        ("prompt", ["w1", 5], "prompt"),  # a batch of prompts, its second none
        ("prompt", [99], "prompt"),
        ("edgespec", {"window": "nonesuch"}, "edgespec.window"),
        ("edgespec", {"slo": "x"}, "edgespec"),
        ("stop", "x" * 257, "stop"),  # held-back prefixes cost its length squared per token
        ("n", True, "n"),  # True == 1, but no integer
        ("presence_penalty", 2.5, "presence_penalty"),  # OpenAI's [-2, 2]
        ("frequency_penalty", "1", "frequency_penalty"),
        ("repetition_penalty", 0, "repetition_penalty"),  # above 0
        ("repetition_penalty", 1e-38, "repetition_penalty"),  # a logit / it: past float32
        ("repetition_penalty", 1e300, "repetition_penalty"),  # float32's inf: 0 · inf = NaN
        ("logit_bias", {"5": 101}, "logit_bias"),
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
