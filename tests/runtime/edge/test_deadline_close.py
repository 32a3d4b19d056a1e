"""A generation whose verify call outlives ``request_timeout_s`` on a server that is busy with
its pass (a long prompt's first, as the real Gemma target's 3,500-token prefill on 2 cores,
60 s against the default 30 s) and then gives up closes its session: the server holds it,
and its KV, until then. It was left open (``OpenSession``, ``Verify``, no close), freed only
by the server's ``session_timeout_s``; a session the server said it lost is not closed."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.commands.draft_run import DraftRun
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.wire.drafter_clients import drafter_clients
from tests.runtime.conftest import start_server
from tests.runtime.hung_server import VOCAB_SIZE, hung_server
from tests.runtime.wrapped_target import WrappedTarget

PASS_S = 2.5
"""How long the slow target's first pass takes: past the client's 1 s request timeout."""


class SlowFirstPass(WrappedTarget):
    """The real target, its first forward pass held for :data:`PASS_S`."""

    def __init__(self, inner: TransformersTarget) -> None:
        super().__init__(inner)
        self.done = threading.Event()

    def forward(self, items: Any) -> Any:
        if not self.done.is_set():
            time.sleep(PASS_S)
            self.done.set()
        return self._inner.forward(items)


def _run(address: str) -> RequestError:
    """A distributed run against ``address`` giving up after 1 s: what it raised."""
    config = from_dict(DrafterConfig, {"server": address, "draft": "ngram",
                                       "request_timeout_s": 1.0,
                                       "retry_timeout_s": 1.0})  # fmt: skip
    (verifier,) = drafter_clients(config)
    run = DraftRun(config, verifier, (5, 6, 7), None, None)
    with pytest.raises(RequestError) as info:
        run.distributed(None, VOCAB_SIZE, StaticWindow(4), None, False)
    return info.value


def test_a_session_left_busy_on_the_server_is_closed(target: TransformersTarget) -> None:
    slow = SlowFirstPass(target)
    server = start_server(slow)  # type: ignore[arg-type]
    try:
        error = _run(f"127.0.0.1:{server.port}")
        assert (error.code, error.message) == (ErrorCode.UNAVAILABLE, "Deadline Exceeded")
        assert slow.done.wait(PASS_S + 5)
        service = server.service
        assert service is not None
        deadline = time.monotonic() + 5
        while service.stats().num_sessions and time.monotonic() < deadline:
            time.sleep(0.05)  # the pass's end answers the close
        assert service.stats().num_sessions == 0  # was 1 until session_timeout_s
    finally:
        server.stop()


def test_the_close_is_sent_to_a_silent_server_too() -> None:
    with hung_server(health_hangs=False, opens=True) as (address, calls):
        error = _run(address)
    assert (error.code, error.message) == (ErrorCode.UNAVAILABLE, "Deadline Exceeded")
    assert calls == ["OpenSession", "Verify", "CloseSession"]  # was without CloseSession
