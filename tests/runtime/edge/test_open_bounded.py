"""An open retried while the server does not answer waits for each answer only as long as
is left of the retry window (at least ``MIN_ATTEMPT_S``), a first open and a reopen alike.
Each attempt waited the whole request timeout: against a server that takes the call and
never answers (stopped with SIGSTOP, hung), the first open of a request with
``--retry-timeout-s 3`` and ``--request-timeout-s 5`` took 5 s, not 3, and a window of 12 s
took 15.

No network: a fake server on a hand-advanced clock, whose every open runs to its deadline
(the gRPC client's, over a real silent server: tests/runtime/openai_api/test_hung_server.py)."""

from __future__ import annotations

import threading

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.edge.reconnect import (
    MIN_ATTEMPT_S,
    Cancelled,
    open_retrying,
    reopen,
)
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from tests.runtime.round_fakes import Clock

REQUEST_TIMEOUT_S = 5.0
"""The client's own deadline for every call."""
SEEN_LATE_S = 0.001
"""How long after a deadline its failure is seen."""
SPEC = SessionSpec("s", "edge-0", (5,), SamplingParams(max_new_tokens=7))


class Silent:
    """A server that answers no open: each waits until its deadline on ``clock`` (the
    client's request timeout, or the shorter one it was given), recorded in ``waits``, then
    fails ``UNAVAILABLE`` as gRPC's deadline does; closes recorded, not waited for."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.waits: list[float] = []
        self.closed: list[str] = []

    def _wait(self, timeout_s: float) -> None:
        self.waits.append(timeout_s)
        self.clock.t += timeout_s + SEEN_LATE_S
        raise RequestError(ErrorCode.UNAVAILABLE, "Deadline Exceeded")

    def open(self, spec: SessionSpec) -> None:
        self._wait(REQUEST_TIMEOUT_S)

    def open_within(
        self, spec: SessionSpec, timeout_s: float, cancel: threading.Event | None
    ) -> None:
        self._wait(min(timeout_s, REQUEST_TIMEOUT_S))

    def verify(self, call: VerifyCall) -> VerifyReply:
        raise AssertionError("nothing is verified")

    def close(self, session_id: str) -> None:
        self.closed.append(session_id)


def _failed_open(retry_timeout_s: float) -> tuple[Silent, Clock]:
    clock = Clock()
    server = Silent(clock)
    with pytest.raises(RequestError) as info:
        open_retrying(server, SPEC, clock, retry_timeout_s, 0.0)
    assert (info.value.code, info.value.message) == (ErrorCode.UNAVAILABLE, "Deadline Exceeded")
    return server, clock


def test_a_first_open_waits_no_longer_than_the_retry_window() -> None:
    server, clock = _failed_open(3.0)
    assert server.waits == [3.0]  # was [5.0]: the request timeout
    assert clock.t == pytest.approx(3.0 + SEEN_LATE_S)


def test_a_window_longer_than_the_request_timeout_ends_with_its_last_attempt() -> None:
    server, clock = _failed_open(12.0)
    # two whole request timeouts, then what is left (was a third whole one, to 15 s)
    assert server.waits == pytest.approx([5.0, 5.0, 2.0 - 2 * SEEN_LATE_S])
    assert clock.t == pytest.approx(12.0 + SEEN_LATE_S)


def test_an_open_with_less_than_min_attempt_s_left_still_waits_that_long() -> None:
    """A request whose routing took nearly all of its window: its open still has a chance
    to be answered."""
    server, clock = _failed_open(0.2)
    assert server.waits == [MIN_ATTEMPT_S]
    assert clock.t == pytest.approx(MIN_ATTEMPT_S + SEEN_LATE_S)


def test_a_reopen_waits_no_longer_than_its_window_and_closes_its_attempt() -> None:
    clock = Clock()
    server = Silent(clock)
    with pytest.raises(RequestError, match="Deadline Exceeded"):
        reopen(server, SPEC, (6,), clock, 1, 3.0, 0.0)
    assert server.waits == [3.0]  # was [5.0]
    assert server.closed == ["s#r1.1"]  # it may have opened before its deadline


class CutShort(Silent):
    """An open cut short by its cancel event, which closes the session itself (the gRPC
    client closes it without waiting for the answer)."""

    def open_within(
        self, spec: SessionSpec, timeout_s: float, cancel: threading.Event | None
    ) -> None:
        assert cancel is not None
        cancel.set()
        raise Cancelled("cancelled while its session's open was unanswered")


def test_an_open_its_cancel_event_cut_short_is_not_closed_again() -> None:
    cancel = threading.Event()
    server = CutShort(Clock())
    with pytest.raises(Cancelled):
        open_retrying(server, SPEC, server.clock, 3.0, 0.05, cancel)
    assert server.closed == []
