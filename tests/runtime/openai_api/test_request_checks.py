"""Request checks in the client's terms: numbers of any size are 400s naming their field
(quoting at most 80 characters of them), a key given twice is refused, a chat prompt's
problems name ``messages``, and a prompt plus ``max_tokens`` beyond the target's context is
``context_length_exceeded`` (before a worker or a server session is taken, when the
server's ``Health`` says the context; else as the server refuses it), never ``max_new_tokens``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.schema import Limits
from edgespec.runtime.openai_api.serve import ApiThread, _setup
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.openai_api.conftest import (
    LIMITS,
    MODEL,
    _error,
    _post,
    free_port,
    word_tokenizer,
)

CHAT = "/v1/chat/completions"
BIG = 10**400
BIG_SHOWN = "1" + "0" * 78 + "…"  # 80 characters of its 401


def _chat(content: str, **fields: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": content}], **fields}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("temperature", BIG, f"temperature must be in [0.0, 2.0], got {BIG_SHOWN}"),
        ("temperature", -BIG, f"temperature must be in [0.0, 2.0], got -1{'0' * 77}…"),
        ("top_p", BIG, f"top_p must be in [0.0, 1.0], got {BIG_SHOWN}"),
        ("max_tokens", BIG, "max_tokens must be in [1, 4000] (--openai-max-tokens), "
         f"got {BIG_SHOWN}"),
        ("seed", BIG, f"seed must be in [-2**63, 2**63) (OpenAI's int64), got {BIG_SHOWN}"),
    ],
    ids=["temperature", "temperature-negative", "top_p", "max_tokens", "seed"],
)  # fmt: skip
def test_a_number_of_any_size_is_400_naming_its_field(
    api: ApiThread, field: str, value: int, message: str
) -> None:
    """temperature and top_p were 500s (OverflowError: int too large to convert to float);
    max_tokens and seed quoted all 401 digits."""
    status, error = _error(api, {"model": MODEL, "prompt": "w1", field: value})
    assert (status, error["param"], error["code"], error["message"]) == (400, field, None, message)


def test_chat_max_completion_tokens_is_quoted_short(api: ApiThread) -> None:
    status, error = _error(api, _chat("w1", max_completion_tokens=BIG), path=CHAT)
    assert (status, error["param"], error["message"]) == (
        400, "max_completion_tokens", "max_completion_tokens must be in [1, 4000] "
        f"(--openai-max-tokens), got {BIG_SHOWN}"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        (b'{"model": "tiny", "prompt": "w1", "max_tokens": 1, "max_tokens": 3}', "max_tokens"),
        (b'{"model": "tiny", "messages": [{"role": "user", "role": "system", "content": "w1"}]}',
         "role"),
    ],
    ids=["top-level", "nested"],
)  # fmt: skip
def test_a_key_given_twice_is_400(api: ApiThread, raw: bytes, key: str) -> None:
    """The last value counted, silently (a max_tokens of 1 answered with 3 tokens)."""
    path = CHAT if b"messages" in raw else "/v1/completions"
    status, error = _error(api, raw, path=path)
    assert (status, error["param"], error["code"], error["message"]) == (
        400, None, "duplicate_key",
        f"request body names the key {json.dumps(key)} twice in one object: give each key once",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("content", "code", "message"),
    [
        ("w1 " * 65, "context_length_exceeded", "the prompt is 65 tokens, over the limit of 64 "
         "tokens (--openai-max-prompt-tokens)"),
        ("", None, "the prompt is empty after tokenization"),
    ],
    ids=["over-the-limit", "empty"],
)  # fmt: skip
def test_a_chat_prompt_refused_after_tokenizing_names_messages(
    api: ApiThread, content: str, code: str | None, message: str
) -> None:
    """Both named ``prompt``, a field chat requests do not have."""
    status, error = _error(api, _chat(content, max_tokens=2), path=CHAT)
    assert (status, error["param"], error["code"], error["message"]) == (
        400, "messages", code, message
    )  # fmt: skip


def _endpoint(address: str, draft_model: Any, context: int | None, limits: Limits) -> ApiThread:
    """An absent server is retried for 0.5 s (30 s by default), then a 503."""
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft",
                                       "retry_timeout_s": 0.5})  # fmt: skip
    verifier = RemoteVerifier(address, timeout_s=5.0)
    setup = EdgeSetup(config, draft_model, word_tokenizer(64), 64, 24, (verifier,), None, context)
    return ApiThread(build_app(setup, ApiConfig(MODEL, limits=limits)), "127.0.0.1").start()


@pytest.fixture(scope="module")
def context_40(draft_model: Any) -> Iterator[ApiThread]:
    """A target context of 40 (as if Health said so) and no server: a request that got as
    far as opening a session would be a 503."""
    running = _endpoint(f"127.0.0.1:{free_port()}", draft_model, 40, LIMITS)
    yield running
    running.stop()


def _over(prompt: int, name: str, max_tokens: int, context: int) -> str:
    return (f"the prompt is {prompt} tokens and {name} is {max_tokens}: {prompt + max_tokens} "
            f"tokens, over the target's context of {context}; shorten the prompt or lower "
            f"{name}")  # fmt: skip


WORDS_30 = "w1 " * 30
CONTEXT_CASES = [
    ({"model": MODEL, "prompt": WORDS_30, "max_tokens": 11}, "/v1/completions", "prompt",
     _over(30, "max_tokens", 11, 40)),
    ({"model": MODEL, "prompt": [1] * 30, "max_tokens": 11}, "/v1/completions", "prompt",
     _over(30, "max_tokens", 11, 40)),
    (_chat(WORDS_30, max_tokens=11), CHAT, "messages", _over(30, "max_tokens", 11, 40)),
    (_chat(WORDS_30, max_completion_tokens=11), CHAT, "messages",
     _over(30, "max_completion_tokens", 11, 40)),
    ({"model": MODEL, "prompt": "w1", "max_tokens": 40}, "/v1/completions", "max_tokens",
     "max_tokens is 40, which leaves no room for a prompt in the target's context of 40 tokens"),
    ({"model": MODEL, "prompt": "w1 " * 40, "max_tokens": 0, "echo": True, "logprobs": 0},
     "/v1/completions", "prompt", "the prompt is 40 tokens: scoring it (max_tokens 0) takes one "
     "token more than the prompt, over the target's context of 40; shorten the prompt"),
]  # fmt: skip
CONTEXT_IDS = ["text", "token-ids", "chat", "chat-max-completion-tokens", "max-tokens-alone",
               "scoring-a-whole-context"]  # fmt: skip


@pytest.mark.parametrize(("body", "path", "param", "message"), CONTEXT_CASES, ids=CONTEXT_IDS)
def test_a_request_beyond_the_context_is_refused_before_it_runs(
    context_40: ApiThread, body: dict[str, Any], path: str, param: str, message: str
) -> None:
    """It reached the server (a worker taken, a session opened) and came back as a 400
    with param null and code invalid_argument, about ``max_new_tokens``."""
    status, error = _error(context_40, body, path=path)
    assert (status, error["param"], error["code"], error["message"]) == (
        400, param, "context_length_exceeded", message
    )  # fmt: skip


@pytest.mark.parametrize(
    "body",
    [{"model": MODEL, "prompt": WORDS_30, "max_tokens": 10},
     {"model": MODEL, "prompt": "w1 " * 39, "max_tokens": 0, "echo": True}],
    ids=["completion", "scoring"],
)  # fmt: skip
def test_a_request_that_fills_the_context_exactly_runs(
    context_40: ApiThread, body: dict[str, Any]
) -> None:
    status, reply, _ = _post(context_40, "/v1/completions", json.dumps(body).encode())
    assert status == 503, reply  # it went on to the (absent) server


@pytest.fixture(scope="module")
def context_unknown(grpc_server: ServerThread, draft_model: Any) -> Iterator[ApiThread]:
    """The tiny target's context is 4096, but the endpoint does not know it."""
    limits = Limits(max_body_bytes=4096, max_prompt_tokens=64, max_tokens=5000)
    running = _endpoint(f"127.0.0.1:{grpc_server.port}", draft_model, None, limits)
    yield running
    running.stop()


@pytest.mark.parametrize(
    ("body", "path", "param", "message"),
    [
        ({"model": MODEL, "prompt": "w1 w2", "max_tokens": 4095}, "/v1/completions", "prompt",
         _over(2, "max_tokens", 4095, 4096)),
        (_chat("w1 w2", max_completion_tokens=4095), CHAT, "messages",
         _over(2, "max_completion_tokens", 4095, 4096)),
        ({"model": MODEL, "prompt": "w1", "max_tokens": 4096, "stream": True}, "/v1/completions",
         "max_tokens", "max_tokens is 4096, which leaves no room for a prompt in the target's "
         "context of 4096 tokens"),
    ],
    ids=["text", "chat", "max-tokens-alone-streamed"],
)  # fmt: skip
def test_the_servers_context_refusal_is_in_the_clients_terms(
    context_unknown: ApiThread, body: dict[str, Any], path: str, param: str, message: str
) -> None:
    status, error = _error(context_unknown, body, path=path)
    assert (status, error["param"], error["code"], error["message"]) == (
        400, param, "context_length_exceeded", message
    )  # fmt: skip


def test_the_endpoint_takes_the_context_from_the_servers_health(
    grpc_server: ServerThread,
) -> None:
    address = f"127.0.0.1:{grpc_server.port}"
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft"})
    setup = _setup(config, RemoteVerifier(address, timeout_s=5.0), None, word_tokenizer(64), 64)
    assert setup.max_context_tokens == 4096


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"prompt": "w1 w2", "n": 16, "max_tokens": 400, "logprobs": 20},
         "16 × (0 + 400) × 21 = 134,400"),
        ({"prompt": "w1 " * 20, "n": 16, "max_tokens": 380, "logprobs": 20, "echo": True},
         "16 × (20 + 380) × 21 = 134,400"),  # refused once tokenized: its 20 echoed tokens
    ],
    ids=["choices", "echoed-prompt"],
)  # fmt: skip
def test_a_response_of_too_many_log_probabilities_is_refused_before_it_runs(
    api: ApiThread, fields: dict[str, Any], said: str
) -> None:
    """A request of a few kilobytes asked a 17 MB response (n 16, echo, logprobs 20, a
    2,000-token prompt), built in the endpoint's memory; it is a 400 naming logprobs."""
    status, error = _error(api, {"model": MODEL, **fields})
    assert (status, error["param"]) == (400, "logprobs")
    assert error["message"] == (
        f"n × (echoed prompt tokens + max_tokens) × (1 + logprobs) is {said} log-probabilities, "
        "over the 131,072 one response may hold; ask fewer choices, tokens or alternatives"
    )


def test_a_batch_of_prompts_is_bound_by_their_log_probabilities_together(api: ApiThread) -> None:
    """Each prompt within the bound, 16 of them over it: 16 × 1 × (4 + 400) × 21 entries."""
    body = {"model": MODEL, "prompt": ["w1 w2 w3 w4"] * 16, "max_tokens": 400, "logprobs": 20,
            "echo": True}  # fmt: skip
    status, error = _error(api, body)
    assert (status, error["param"]) == (400, "logprobs")
    assert error["message"] == (
        "16 prompts' n × (echoed prompt tokens + max_tokens) × (1 + logprobs) sum to 135,744 "
        "log-probabilities, over the 131,072 one response may hold; ask fewer choices, tokens "
        "or alternatives"
    )
