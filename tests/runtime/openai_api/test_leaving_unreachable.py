"""A client that leaves while the verification server is unreachable frees its worker at
once: the generation, reopening its lost session every backoff, sees its cancel event
within one backoff instead of retrying for the whole budget (20 s here, the progress
timeout; 30 s by default) with ``--openai-max-concurrent`` workers one short. A client
that leaves before its response began is taken for gone ``HALF_CLOSE_GRACE_S`` after its
end of stream (it might have half-closed: :mod:`.test_half_close`)."""

from __future__ import annotations

import math
import re
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from edgespec.config import from_dict
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.messages import VerifyCall, VerifyReply
from edgespec.runtime.openai_api.admission import Concurrency
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.connections import HALF_CLOSE_GRACE_S
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import LIMITS, MODEL, word_tokenizer

RETRY_BUDGET_S = 20.0
"""How long the old code held the worker: the progress timeout bounds the reopening."""
FREED_WITHIN_S = 1.5
"""From the client's leaving (once the endpoint takes it for gone) to its worker free:
the endpoint's disconnect poll (0.25 s), one backoff (0.05 s), slack for a loaded machine."""


class StoppingVerifier:
    """The endpoint's client of ``server``, which it stops after the first verification
    has answered (between two rounds, as a server crash would): every later call finds
    nobody listening (``UNAVAILABLE``)."""

    def __init__(self, inner: RemoteVerifier, server: ServerThread) -> None:
        self._inner = inner
        self._server = server

    def verify(self, call: VerifyCall) -> VerifyReply:
        return self.verify_within(call, math.inf)

    def verify_within(
        self, call: VerifyCall, timeout_s: float, cancel: threading.Event | None = None
    ) -> VerifyReply:
        reply = self._inner.verify_within(call, timeout_s, cancel)
        self._server.stop(grace_s=0)  # idempotent
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def server(target: TransformersTarget) -> Iterator[ServerThread]:
    running = start_server(target, host="127.0.0.1")
    yield running
    running.stop(grace_s=0)


@pytest.fixture
def api(server: ServerThread, draft_model: Any) -> Iterator[ApiThread]:
    address = f"127.0.0.1:{server.port}"
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft",
                                       "progress_timeout_s": RETRY_BUDGET_S})  # fmt: skip
    verifier = StoppingVerifier(RemoteVerifier(address, timeout_s=5.0), server)
    setup = EdgeSetup(config, draft_model, word_tokenizer(64), 64, 24, (verifier,))
    one = ApiConfig(MODEL, limits=LIMITS, concurrency=Concurrency(1, 0))
    running = ApiThread(build_app(setup, one), "127.0.0.1").start()
    yield running
    running.stop()


def _running(api: ApiThread) -> int:
    """``edgespec_openai_requests_running`` on ``/metrics``."""
    url = f"http://127.0.0.1:{api.port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    found = re.search(r"^edgespec_openai_requests_running (\d+)$", text, re.MULTILINE)
    assert found is not None, text
    return int(found.group(1))


def _freed_after(api: ApiThread, left: float) -> float:
    """Seconds from ``left`` until no generation runs (at most ``RETRY_BUDGET_S`` + 10)."""
    while _running(api) and time.monotonic() - left < RETRY_BUDGET_S + 10:
        time.sleep(0.05)
    return time.monotonic() - left


def _client(api: ApiThread, timeout_s: float) -> Any:
    return openai.OpenAI(base_url=f"http://127.0.0.1:{api.port}/v1", api_key="-",
                         timeout=timeout_s, max_retries=0)  # fmt: skip


def assert_leaving_frees_its_worker(api: ApiThread, max_tokens: int, stream: bool = False) -> None:
    """A client that gives up after 1 s while its request waits for an unreachable server
    (the request still running then) frees the worker within one backoff of being taken
    for gone, not after the retry timeout."""
    with pytest.raises(openai.APITimeoutError):  # not an APIStatusError: no 503 at once
        _client(api, 1.0).completions.create(model=MODEL, prompt="w1", max_tokens=max_tokens,
                                             stream=stream)  # fmt: skip
    left = time.monotonic()
    assert _running(api) == 1
    assert _freed_after(api, left) < HALF_CLOSE_GRACE_S + FREED_WITHIN_S


def test_a_stream_left_while_the_server_is_down_frees_its_worker(api: ApiThread) -> None:
    stream = _client(api, 60).completions.create(model=MODEL, prompt="w1", max_tokens=64,
                                                 stream=True)  # fmt: skip
    next(iter(stream))  # the first round's text: the server has stopped since
    time.sleep(0.5)  # the second round failed: the worker is reopening its session
    assert _running(api) == 1
    stream.close()
    assert _freed_after(api, time.monotonic()) < FREED_WITHIN_S


def test_a_request_left_while_the_server_is_down_frees_its_worker(
    api: ApiThread, server: ServerThread
) -> None:
    assert_leaving_frees_its_worker(api, max_tokens=64)
    server.stop(grace_s=0)  # down for certain: a loaded machine's client may leave first
    # the worker is free for the next client: admitted (one worker, no queue: else a 429),
    # it waits for the server to come back (test_unreachable_at_open), then leaves too
    with pytest.raises(openai.APITimeoutError):
        _client(api, 1.0).completions.create(model=MODEL, prompt="w1", max_tokens=4)
    assert _freed_after(api, time.monotonic()) < HALF_CLOSE_GRACE_S + FREED_WITHIN_S
