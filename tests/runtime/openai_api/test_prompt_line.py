"""Work before a request waits for a worker is bounded: a prompt that cannot fit is refused
by its size before the tokenizer sees it; prompts are tokenized one at a time, at most
four of the longest waiting (a 429 beyond); a client that leaves while its prompt waits
is never tokenized. (Before, every prompt went to a thread of its own at once, 1 MiB took
the tokenizer two seconds, and eight abandoned ones stalled a small request for 8 s.)"""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.openai_api.conftest import MODEL, _error, _post, endpoint, word_tokenizer
from tests.runtime.openai_api.test_concurrency import _metrics

LONG = "w1" + " " * 998  # one token, 1,000 characters (the limit here: 64 tokens x 16)


class HeldTokenizer:
    """The word tokenizer, each encoding held until ``go`` is set; counts them."""

    def __init__(self) -> None:
        self._inner = word_tokenizer(64)
        self.go = threading.Event()
        self.entered = threading.Event()
        self.calls = 0
        self.spelt_on_loop: bool | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        self.entered.set()
        assert self.go.wait(60), "never let go"
        return self._inner(*args, **kwargs)

    def convert_ids_to_tokens(self, ids: list[int]) -> Any:
        """The spelling, noting whether it ran on an event loop's thread."""
        try:
            asyncio.get_running_loop()
            self.spelt_on_loop = True
        except RuntimeError:
            self.spelt_on_loop = False
        return self._inner.convert_ids_to_tokens(ids)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def held(grpc_server: ServerThread, draft_model: Any) -> Iterator[tuple[ApiThread, HeldTokenizer]]:
    tokenizer = HeldTokenizer()
    api = endpoint(f"127.0.0.1:{grpc_server.port}", draft_model, tokenizer)
    yield api, tokenizer
    tokenizer.go.set()
    api.stop()


def _complete(api: ApiThread, prompt: str) -> int:
    body = json.dumps({"model": MODEL, "prompt": prompt, "max_tokens": 2}).encode()
    return _post(api, "/v1/completions", body)[0]


def _wait_for(api: ApiThread, waiting: int, chars: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        seen = _metrics(api)
        if (seen["prompts_waiting"], seen["prompts_waiting_chars"]) == (waiting, chars):
            return
        time.sleep(0.02)
    raise AssertionError(f"never {waiting} prompts of {chars} characters waiting: {seen}")


@pytest.mark.parametrize(
    ("path", "body", "param", "message"),
    [
        ("/v1/completions", {"prompt": "w1 " * 700}, "prompt",
         "the prompt is 2100 characters, over the limit of 1024 characters (16 per token of "
         "--openai-max-prompt-tokens 64)"),
        ("/v1/chat/completions",
         {"messages": [{"role": "user", "content": "w1 " * 200}] * 2}, "messages",
         "the messages' content is at least 1200 characters (by messages[1]), over the limit "
         "of 1024 characters (16 per token of --openai-max-prompt-tokens 64)"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": ""}] * 65},
         "messages", "messages has 65 messages, over the limit of 64 (each is at least one "
         "token of --openai-max-prompt-tokens)"),
    ],
    ids=["text", "chat-characters", "chat-messages"],
)  # fmt: skip
def test_a_prompt_that_cannot_fit_is_refused_before_it_is_tokenized(
    held: tuple[ApiThread, HeldTokenizer], path: str, body: dict[str, Any], param: str,
    message: str,
) -> None:  # fmt: skip
    api, tokenizer = held
    status, error = _error(api, {"model": MODEL, **body}, path=path)
    assert (status, error["param"], error["code"]) == (400, param, "context_length_exceeded")
    assert error["message"] == message
    assert tokenizer.calls == 0


def test_prompts_wait_their_turn_and_a_full_line_is_429(
    held: tuple[ApiThread, HeldTokenizer],
) -> None:
    api, tokenizer = held
    with ThreadPoolExecutor(5) as pool:
        first = pool.submit(_complete, api, LONG)
        assert tokenizer.entered.wait(30)
        waiting = [pool.submit(_complete, api, LONG) for _ in range(4)]
        _wait_for(api, waiting=4, chars=4000)  # one tokenizing, four waiting: not threads
        status, reply, headers = _post(
            api, "/v1/completions", json.dumps({"model": MODEL, "prompt": LONG}).encode()
        )
        assert (status, headers["Retry-After"]) == (429, "1")
        error = reply["error"]
        assert (error["type"], error["code"]) == ("rate_limit_error", "too_many_requests")
        assert error["message"] == (
            "the endpoint is busy: 4 prompts of 4000 characters are waiting to be tokenized; "
            "a prompt of 1000 more would pass the limit of 4096; retry after 1s"
        )
        assert tokenizer.calls == 1
        tokenizer.go.set()
        assert [f.result(timeout=60) for f in (first, *waiting)] == [200] * 5
    assert tokenizer.calls == 5
    assert _metrics(api)["prompts_refused_total"] == 1


@pytest.mark.parametrize(
    ("path", "body"),
    [("/v1/completions", {"model": MODEL, "prompt": LONG, "max_tokens": 2}),
     ("/tokenize", {"prompt": LONG})],
)  # fmt: skip
def test_a_client_that_leaves_while_its_prompt_waits_is_never_tokenized(
    held: tuple[ApiThread, HeldTokenizer], path: str, body: dict[str, Any]
) -> None:
    """``/tokenize`` too: it kept a gone client's place, which took the tokenizer's turn
    after it and held the line's room meanwhile (429s for the clients still there)."""
    api, tokenizer = held
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(_complete, api, "w1 w2")
        assert tokenizer.entered.wait(30)
        leaving = []
        for _ in range(2):
            connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=30)
            connection.request("POST", path, json.dumps(body),
                               {"Content-Type": "application/json"})  # fmt: skip
            leaving.append(connection)
        _wait_for(api, waiting=2, chars=2000)
        for connection in leaving:
            connection.close()
        _wait_for(api, waiting=0, chars=0)  # their places given up
        tokenizer.go.set()
        assert first.result(timeout=60) == 200
    assert tokenizer.calls == 1


def test_a_token_id_prompts_window_is_made_off_the_event_loop(
    api: ApiThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token-id prompt has nothing to tokenize, but its window policy is made (an AWC
    window reads its weights, 20–40 ms): that ran on the event loop, stalling every other
    client meanwhile. A window that takes a second to make leaves /health answering."""
    from edgespec.runtime.openai_api.generation import prepare as real

    making, made = threading.Event(), threading.Event()

    def slow_prepare(*args: Any) -> Any:
        making.set()
        time.sleep(1.0)
        made.set()
        return real(*args)

    monkeypatch.setattr("edgespec.runtime.openai_api.app.prepare", slow_prepare)
    body = json.dumps({"model": MODEL, "prompt": [5, 6, 7], "max_tokens": 2}).encode()
    with ThreadPoolExecutor(1) as pool:
        status = pool.submit(_post, api, "/v1/completions", body)
        assert making.wait(10)
        connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
        connection.request("GET", "/health")
        assert connection.getresponse().status == 200
        assert not made.is_set()  # answered while the window was still being made
        connection.close()
        assert status.result(timeout=30)[0] == 200


def test_tokenizes_spelling_runs_off_the_event_loop(
    held: tuple[ApiThread, HeldTokenizer],
) -> None:
    """``/tokenize``'s ``return_token_strs`` spelt the ids on the event loop, waiting there
    for the tokenizer's lock that the threads tokenizing other prompts hold: every client
    waited with it."""
    api, tokenizer = held
    tokenizer.go.set()
    body = json.dumps({"prompt": "w1 w2", "return_token_strs": True}).encode()
    status, reply, _ = _post(api, "/tokenize", body)
    assert (status, reply["token_strs"]) == (200, ["w1", "w2"])
    assert tokenizer.spelt_on_loop is False
