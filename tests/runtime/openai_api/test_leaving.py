"""A client that leaves ends its generation at the next round (a centralized request's, at
the server's next chunk) and its session is closed, streamed or not. The server's forward
passes are let through one permit at a time, so the client always leaves while its
generation is held mid-way, however fast or loaded the machine (no hoping that 4000
tokens outlast a 1 s client timeout)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import openai
import pytest

from edgespec.config import from_dict
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.openai_api.app import ApiConfig, build_app
from edgespec.runtime.openai_api.connections import HALF_CLOSE_GRACE_S
from edgespec.runtime.openai_api.edge_setup import EdgeSetup
from edgespec.runtime.openai_api.serve import ApiThread
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import LIMITS, MODEL, word_tokenizer

PLENTY = 10_000


class GatedTarget(TransformersTarget):
    """The tiny target; each forward pass takes one permit of ``permits``."""

    permits = threading.Semaphore(0)

    def forward(self, items: Sequence[Any]) -> Any:
        assert self.permits.acquire(timeout=60), "no permit in 60 s"
        return super().forward(items)


@pytest.fixture
def gated(target_model: Any, draft_model: Any) -> Iterator[tuple[ApiThread, ServerThread]]:
    GatedTarget.permits = threading.Semaphore(0)
    # the load-time probes would wait at the gate: the masks and numerics are tested elsewhere
    server = start_server(GatedTarget(target_model, check_masks=False), host="127.0.0.1")
    address = f"127.0.0.1:{server.port}"
    config = from_dict(DrafterConfig, {"server": address, "draft": "tiny-draft"})
    setup = EdgeSetup(config, draft_model, word_tokenizer(64), 64, 24,
                      (RemoteVerifier(address, timeout_s=60.0),))  # fmt: skip
    api = ApiThread(build_app(setup, ApiConfig(MODEL, limits=LIMITS)), "127.0.0.1").start()
    yield api, server
    GatedTarget.permits.release(PLENTY)
    api.stop()
    server.stop(grace_s=0)


def _closed(server: ServerThread) -> tuple[int, int]:
    """The server's sessions once the generation has ended (at most 30 s), and the tokens it
    forwarded."""
    assert server.service is not None
    stats = server.service.stats
    deadline = time.monotonic() + 30
    while stats().num_sessions and time.monotonic() < deadline:
        time.sleep(0.02)
    return stats().num_sessions, stats().num_tokens_forwarded


def _client(api: ApiThread, timeout_s: float) -> Any:
    return openai.OpenAI(base_url=f"http://127.0.0.1:{api.port}/v1", api_key="-",
                         timeout=timeout_s, max_retries=0)  # fmt: skip


MODES = pytest.mark.parametrize("mode", ["distributed", "centralized"])


@MODES
def test_client_leaving_mid_stream_closes_the_session(
    gated: tuple[ApiThread, ServerThread], mode: str
) -> None:
    api, server = gated
    GatedTarget.permits.release(1)  # the first round's verification (or decoding) only
    ext = {"ignore_eos": True, "edgespec": {"mode": mode}}
    stream = _client(api, 60).completions.create(model=MODEL, prompt="w1", max_tokens=4000,
                                                 stream=True, extra_body=ext)  # fmt: skip
    next(iter(stream))
    assert server.service is not None and server.service.stats().num_sessions == 1
    stream.close()
    time.sleep(2)  # the endpoint sees the stream closed; the worker waits on round 2
    GatedTarget.permits.release(PLENTY)
    sessions, forwarded = _closed(server)
    assert sessions == 0
    assert forwarded < 200  # ended at its next round, not run to its 4000 tokens


@MODES
def test_client_leaving_a_non_streamed_request_closes_the_session(
    gated: tuple[ApiThread, ServerThread], mode: str
) -> None:
    api, server = gated  # no permit: the generation cannot end before the client leaves
    with pytest.raises(openai.APITimeoutError):
        ext = {"ignore_eos": True, "edgespec": {"mode": mode}}
        _client(api, 1.0).completions.create(model=MODEL, prompt="w1", max_tokens=4000,
                                             extra_body=ext)  # fmt: skip
    # the endpoint takes it for gone after the grace for a half-close, then notices
    time.sleep(HALF_CLOSE_GRACE_S + 2)  # within its 0.25 s poll
    GatedTarget.permits.release(PLENTY)
    sessions, forwarded = _closed(server)
    assert sessions == 0
    assert forwarded < 200  # ended at its first round
