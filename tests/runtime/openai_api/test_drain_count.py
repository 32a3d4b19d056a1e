"""A stopping endpoint's first line counts every request it has taken and not answered: one
still having its prompt tokenized (or its body read) too, which it finishes all the same.
It counted only those waiting for a worker or generating: a stop with one request held in
the tokenizer said nothing, as if none were in flight."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api import app as app_module
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.errors import invalid
from edgespec.runtime.openai_api.in_flight import InFlight
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.openai_api.stopping import serve_until_stopped
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.openai_api.conftest import LIMITS, MODEL, _post, free_port, word_tokenizer

WAIT_S = 10.0
"""The most any step here waits (the old code's stop waited for the held request until
the fallback release below)."""


def _held_prepare(entered: threading.Event, release: threading.Event) -> Callable[..., Any]:
    """A prepare that holds the request in tokenization until ``release``, then refuses it
    (a 400: no server is needed to answer it)."""

    def prepare(*args: Any) -> Any:
        entered.set()
        release.wait(WAIT_S)
        raise invalid("tokenized too late", param="prompt")

    return prepare


def test_a_request_held_in_tokenization_is_counted_in_the_stopping_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entered, release = threading.Event(), threading.Event()
    monkeypatch.setattr(app_module, "prepare", _held_prepare(entered, release))
    address = f"127.0.0.1:{free_port()}"  # nobody listens: no call is made
    config = from_dict(DrafterConfig, {"server": address, "draft": "ngram"})
    setup = EdgeSetup(config, None, word_tokenizer(64), 64, 24, (RemoteVerifier(address),))
    in_flight = InFlight()
    api = ApiThread(build_app(setup, ApiConfig(MODEL, limits=LIMITS), in_flight), "127.0.0.1")
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        release.set()  # the request may finish once the stop has said what it waits for

    body = json.dumps({"model": MODEL, "prompt": "w1 w2", "max_tokens": 4}).encode()
    signals = iter([int(signal.SIGTERM)])
    fallback = threading.Timer(WAIT_S / 2, release.set)  # the old code said nothing
    with ThreadPoolExecutor(1) as pool:
        api.start()
        reply = pool.submit(_post, api, "/v1/completions", body)
        assert entered.wait(WAIT_S)
        assert in_flight.count() == 1  # was 0: only a worker's wait and generations counted
        fallback.start()
        stopped = serve_until_stopped(api, in_flight, lambda _: next(signals, None), say)
        status, answer, _ = reply.result(WAIT_S)
    fallback.cancel()
    assert stopped.signum == signal.SIGTERM
    assert said == ["stopping: finishing 1 request in flight for at most 30 s (Ctrl-C again "
                    "cancels it)"]  # fmt: skip
    assert (status, answer["error"]["message"]) == (400, "tokenized too late")  # finished
    assert in_flight.count() == 0
