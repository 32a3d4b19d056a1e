"""Which fields a request may carry, checked before anything runs: a field that would change
the output and is not applied is refused naming it (never ignored), ``top_p`` at temperature
0 too, ``logprobs`` in each route's own spelling; chat messages are system, user and
assistant turns of role and content only; ``stream_options`` is an object of booleans, with
``stream: true`` only; ``stop: []`` is no stop; an error message quotes at most 80
characters of what the client sent."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edgespec.runtime.openai_api.serve import ApiThread
from tests.runtime.openai_api.conftest import _error, _post

BASE = {"model": "tiny", "prompt": "w5 w6 w7", "max_tokens": 4}
CHAT = "/v1/chat/completions"


VALUE, PARAMETER, UNKNOWN = "unsupported_value", "unsupported_parameter", "unknown_parameter"
"""OpenAI's codes: a value the field does not take, a field that takes none but null, a
field the route does not know."""


@pytest.mark.parametrize(
    ("field", "value", "message", "code"),
    [
        ("best_of", 2, "best_of: 2 is not supported (only null or 1)", VALUE),
        ("reasoning_effort", "high",
         'reasoning_effort: "high" is not supported (only null)', PARAMETER),
        ("modalities", ["audio"],
         'modalities: ["audio"] is not supported (only null or ["text"])', VALUE),
        ("prediction", {"type": "content", "content": "w1"},
         'prediction: {"type": "content", "content": "w1"} is not supported (only null)',
         PARAMETER),
        ("parallel_tool_calls", True, "parallel_tool_calls: true is not supported (only null)",
         PARAMETER),
        ("service_tier", "flex",
         'service_tier: "flex" is not supported (only null, "auto" or "default")', VALUE),
        ("guided_json", {"type": "object"}, 'unknown field "guided_json": this endpoint does '
         "not apply it, so it refuses it (it ignores only metadata, store, user)", UNKNOWN),
        ("messages", [], "messages is a field of /v1/chat/completions, not of /v1/completions",
         UNKNOWN),
    ],
)  # fmt: skip
def test_a_field_that_would_change_the_output_is_refused(
    api: ApiThread, field: str, value: Any, message: str, code: str
) -> None:
    """These were answered 200, the field silently ignored; then refused with code null and
    values in Python's spelling (``logprobs=True``, ``only None, False``)."""
    status, error = _error(api, BASE | {field: value})
    assert (status, error["param"], error["message"], error["code"]) == (
        400, field, message, code,
    )  # fmt: skip


def test_best_of_below_n_is_refused(api: ApiThread) -> None:
    """OpenAI refuses ``best_of`` < ``n`` (each choice is one of ``best_of`` candidates);
    ``best_of: 1`` with ``n: 2`` was answered with two choices."""
    status, error = _error(api, BASE | {"best_of": 1, "n": 2})
    assert (status, error["param"], error["message"]) == (
        400, "best_of", "best_of must be at least n, got best_of 1 with n 2 (this endpoint "
        "takes best_of null or 1)",
    )  # fmt: skip
    status, reply, _ = _post(api, "/v1/completions", json.dumps(BASE | {"n": 2}).encode())
    assert status == 200 and len(reply["choices"]) == 2


def test_top_p_without_a_temperature_is_refused(api: ApiThread) -> None:
    """The endpoint's temperature is the config's (0 here), not OpenAI's 1: a client that
    set only top_p got greedy text, not the nucleus sampling it asked for."""
    status, error = _error(api, BASE | {"top_p": 0.9})
    assert (status, error["param"], error["message"], error["code"]) == (
        400, "top_p", "top_p 0.9 does nothing at temperature 0 (greedy), this endpoint's "
        "default when a request gives none: give a temperature > 0 to sample with top_p", VALUE,
    )  # fmt: skip


def test_a_seed_or_a_cut_that_changes_nothing_at_temperature_0_is_taken(api: ApiThread) -> None:
    """Greedy text is the same with or without a seed (OpenAI clients send one routinely),
    top_p 1 (no cut) or 0 (greedy) asks for greedy text, and so does temperature 0 with any
    cut (OpenAI takes them; a client keeps its preset's top_p when the user picks
    temperature 0: it was a 400)."""
    plain = _post(api, "/v1/completions", json.dumps(BASE).encode())[1]["choices"][0]
    zero_with_cuts = ({"temperature": 0, "top_p": 0.5}, {"temperature": 0, "top_k": 40},
                      {"temperature": 0, "min_p": 0.1, "top_p": 0.9, "seed": 2})  # fmt: skip
    for fields in ({"seed": 7}, {"top_p": 1}, {"top_p": 0, "seed": 3}, {"temperature": 0},
                   *zero_with_cuts):  # fmt: skip
        status, reply, _ = _post(api, "/v1/completions", json.dumps(BASE | fields).encode())
        assert (status, reply["choices"][0]) == (200, plain), fields


def test_fields_that_change_nothing_are_taken(api: ApiThread) -> None:
    body = BASE | {"user": "u1", "metadata": {"a": "b"}, "store": True, "top_k": -1,
                   "repetition_penalty": 1.0, "service_tier": "auto",
                   "guided_json": None}  # fmt: skip
    status, reply, _ = _post(api, "/v1/completions", json.dumps(body).encode())
    assert (status, reply["usage"]["completion_tokens"]) == (200, 4)


def _chat(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "tiny", "max_tokens": 2, "messages": list(messages)}


USER = {"role": "user", "content": "w1"}


@pytest.mark.parametrize(
    ("body", "param", "message", "code"),
    [
        (_chat(USER, {"role": "tool", "content": "w2"}), "messages[1].role",
         "messages[1].role must be one of system, user, assistant (or developer, taken as "
         'system), got "tool"', None),
        (_chat(USER, {"role": "system", "content": "w2"}), "messages[1].role",
         "messages[1].role: a system message must be the first message", None),
        (_chat(USER, {"role": "developer", "content": "w2"}), "messages[1].role",
         "messages[1].role: a system message must be the first message", None),
        (_chat({"role": "system", "content": "w1"}), "messages",
         "messages has no user message: a conversation needs one", None),
        (_chat(USER | {"name": "bob <end_of_turn>"}), "messages[0].name",
         'messages[0].name must be 1 to 64 letters, digits, _ or - (OpenAI\'s), got "bob '
         '<end_of_turn>"', None),
        (_chat(USER, {"role": "assistant", "content": "w2", "tool_calls": [{"id": "x"}]}, USER),
         "messages[1].tool_calls",
         "messages[1].tool_calls is not supported: a message takes role, content and name only",
         PARAMETER),
        (_chat({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}),
         "messages[0].content", "messages[0].content parts must be {\"type\": \"text\", "
         "\"text\": ...} (text only), got {\"type\": \"image_url\", \"image_url\": {\"url\": "
         "\"x\"}}", VALUE),
        (_chat(USER, {"role": "assistant", "content": None}), "messages[1].content",
         "messages[1].content must be a string or a list of text parts, got null", None),
    ],
    ids=["tool-role", "system-later", "developer-later", "no-user", "name", "tool-calls", "image",
         "no-content"],
)  # fmt: skip
def test_a_message_the_endpoint_would_misread_is_refused(
    api: ApiThread, body: dict[str, Any], param: str, message: str, code: str | None
) -> None:
    """Before, Gemma's template rendered a tool or later system turn as one of its own,
    dropped a system-only conversation, and the extra keys were dropped silently."""
    status, error = _error(api, body, path=CHAT)
    assert (status, error["param"], error["message"], error["code"]) == (
        400, param, message, code,
    )  # fmt: skip


def test_a_participants_name_is_taken(api: ApiThread) -> None:
    """OpenAI's ``name`` (multi-agent clients send it) was a 400; it goes to the template,
    which here does not render it: the same reply as without."""
    plain = _post(api, CHAT, json.dumps(_chat(USER) | {"max_tokens": 4}).encode())
    named = _post(
        api, CHAT, json.dumps(_chat(USER | {"name": "bob_2"}) | {"max_tokens": 4}).encode()
    )
    assert named[0] == 200 and named[1]["choices"] == plain[1]["choices"]


def test_a_messages_null_fields_are_absent(api: ApiThread) -> None:
    """The openai client's ``message.model_dump()`` of a reply, appended to the history,
    carries ``name``, ``tool_calls``, ``refusal``, ``function_call`` and ``audio`` as null:
    the same reply as the history without them (was a 400 naming the first)."""
    empty = {"tool_calls": None, "refusal": None, "function_call": None, "audio": None}
    replies = []
    for extra in ({}, {"name": None} | empty):
        turns = (USER | extra, {"role": "assistant", "content": "w2"} | extra, USER)
        status, reply, _ = _post(api, CHAT, json.dumps(_chat(*turns)).encode())
        assert status == 200, reply
        replies.append((reply["usage"], reply["choices"][0]["message"]))
    assert replies[0] == replies[1]


def test_a_developer_message_is_the_system_message(api: ApiThread) -> None:
    """OpenAI's newer clients send the system prompt as role developer: the same prompt."""
    replies = []
    for role in ("system", "developer"):
        body = _chat({"role": role, "content": "w3 w4"}, USER)
        status, reply, _ = _post(api, CHAT, json.dumps(body).encode())
        assert status == 200, reply
        replies.append((reply["usage"], reply["choices"][0]["message"]))
    assert replies[0] == replies[1]


@pytest.mark.parametrize(
    ("chat", "fields", "message"),
    [
        (True, {"logprobs": 1}, "logprobs must be a boolean, got 1"),
        (True, {"top_logprobs": 2}, "top_logprobs needs logprobs: true"),
        (True, {"logprobs": False, "top_logprobs": 2}, "top_logprobs needs logprobs: true"),
        (True, {"logprobs": True, "top_logprobs": 21},
         "top_logprobs must be an integer in [0, 20], got 21"),
        (False, {"logprobs": True}, "logprobs must be an integer in [0, 20], got true"),
        (False, {"top_logprobs": 2},
         "top_logprobs is a field of /v1/chat/completions, not of /v1/completions"),
    ],
)  # fmt: skip
def test_logprobs_in_each_routes_own_spelling(
    api: ApiThread, chat: bool, fields: dict[str, Any], message: str
) -> None:
    """Chat's ``logprobs`` is a boolean with ``top_logprobs`` beside it; completions' an
    integer (how many alternatives; 0: the chosen token's alone)."""
    body = (_chat(USER) if chat else dict(BASE)) | fields
    status, error = _error(api, body, path=CHAT) if chat else _error(api, body)
    assert (status, error["message"]) == (400, message)


@pytest.mark.parametrize(
    ("fields", "param", "message", "code"),
    [
        ({"stream": True, "stream_options": {"include_usage": "no"}},
         "stream_options.include_usage",
         'stream_options.include_usage must be a boolean, got "no"', None),
        ({"stream_options": {"include_usage": True}}, "stream_options",
         "stream_options is only allowed when stream is true", None),
        ({"stream": True, "stream_options": {"include_usage": True, "bogus": 1}},
         "stream_options", 'stream_options has unknown fields ["bogus"] (known: include_usage)',
         UNKNOWN),
        ({"stream": True, "stream_options": [1]}, "stream_options",
         "stream_options must be an object, got [1]", None),
        ({"stream": "yes"}, "stream", 'stream must be a boolean, got "yes"', None),
    ],
    ids=["usage-string", "not-streaming", "unknown-key", "not-an-object", "stream-string"],
)  # fmt: skip
def test_stream_options_are_checked(
    api: ApiThread, fields: dict[str, Any], param: str, message: str, code: str | None
) -> None:
    """Values were quoted in Python's spelling (``'no'``, ``['bogus']``), and an unknown key
    had code null (every other unknown field: ``unknown_parameter``)."""
    status, error = _error(api, BASE | fields)
    assert (status, error["param"], error["message"], error["code"]) == (
        400, param, message, code,
    )  # fmt: skip


def test_an_empty_stop_list_is_no_stop(api: ApiThread) -> None:
    """It was a 400 blaming the client: "max() arg is an empty sequence"."""
    plain = _post(api, "/v1/completions", json.dumps(BASE).encode())[1]
    status, reply, _ = _post(api, "/v1/completions", json.dumps(BASE | {"stop": []}).encode())
    assert status == 200
    assert reply["choices"][0] == plain["choices"][0]
    assert reply["usage"]["completion_tokens"] == 4


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("best_of", "x" * 3000, 'best_of: "' + "x" * 78 + "… is not supported (only null or 1)"),
        ("prompt", {"k": "y" * 3000},
         "prompt must be a string or a non-empty list of token ids, or a list of at most 16 of "
         'those, got {"k": "' + "y" * 72 + "…"),
        ("x" * 3000, 1, 'unknown field "' + "x" * 78 + "…: this endpoint does not apply it, "
         "so it refuses it (it ignores only metadata, store, user)"),
    ],
    ids=["value", "prompt", "field-name"],
)  # fmt: skip
def test_an_error_quotes_at_most_80_characters_of_the_request(
    api: ApiThread, field: str, value: Any, message: str
) -> None:
    """The whole value was quoted: a 3 KB field came back whole (a 1 MiB one, 1 MiB)."""
    status, error = _error(api, BASE | {field: value})
    assert (status, error["message"]) == (400, message)
    assert len(error["param"]) <= 80
