"""The drafter loop's resend of a verify call past its deadline (no model): the identical
call again on the same session, no reopen; the round's network time counted from the
sending its reply's queue time starts at (the first, when the server took the resend over;
the resend, when the first left the queue), so one late call does not make the next
round's reported network time a request timeout long; resends are bounded by the progress
budget's time alone, and a cancel stops them."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from edgespec.runtime.edge.progress import NoProgress, ProgressBudget
from edgespec.runtime.edge.reconnect import Cancelled
from edgespec.runtime.errors import DEADLINE_EXCEEDED, ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall, VerifyReply
from tests.runtime.edge.round_loop_setup import OPTIONS, OUTPUT, run_loop
from tests.runtime.round_fakes import QUEUE_S, VERIFY_CALL_S, Clock, Verifier


class LateOnce(Verifier):
    """Its first verify call outlives its deadline (``UNAVAILABLE: Deadline Exceeded``
    after a call's time); the resend's reply counts its queue from the first sending
    (``taken_over``) or from the resend."""

    def __init__(self, clock: Clock, taken_over: bool) -> None:
        super().__init__(clock)
        self.taken_over = taken_over

    def verify(self, call: VerifyCall) -> VerifyReply:
        if not self.calls:
            self.calls.append(call)
            self.clock.t += VERIFY_CALL_S
            raise RequestError(ErrorCode.UNAVAILABLE, DEADLINE_EXCEEDED)
        reply = super().verify(call)
        if self.taken_over and len(self.calls) == 2:
            return dataclasses.replace(reply, queue_s=QUEUE_S + VERIFY_CALL_S)
        return reply


@pytest.mark.parametrize("taken_over", [False, True], ids=["queued-again", "taken-over"])
def test_a_late_call_is_sent_again_and_its_round_keeps_its_network_time(
    taken_over: bool,
) -> None:
    clock = Clock()
    verifier = LateOnce(clock, taken_over)
    result = run_loop(verifier, clock)
    assert result.output_token_ids == OUTPUT
    assert (result.num_resends, result.num_reconnects) == (1, 0)
    assert verifier.calls[0] == verifier.calls[1]  # the identical call
    assert [s.session_id for s in verifier.specs] == ["s"]  # no reopen
    first = result.rounds[0]
    assert (first.start_s, first.end_s) == (0.0, 2.25)  # the draft, the late call, the resend
    assert (first.uplink_s, first.downlink_s) == (0.3125, 0.3125)  # was 0.8125 each
    assert verifier.calls[2].network_s == 0.625  # the next round reports it


def test_a_cancel_stops_the_resends() -> None:
    clock = Clock()
    cancel = threading.Event()
    told: list[int] = []

    def on_resend(exc: RequestError, num_committed: int, left_s: float) -> None:
        told.append(num_committed)
        cancel.set()  # the caller goes away during the resend

    options = dataclasses.replace(OPTIONS, cancel=cancel, on_resend=on_resend)

    verifier = AlwaysLate(clock)
    with pytest.raises(Cancelled, match="cancelled while its verification was unanswered"):
        run_loop(verifier, clock, options=options)
    assert told == [0]
    assert len(verifier.calls) == 2


class AlwaysLate(Verifier):
    def verify(self, call: VerifyCall) -> VerifyReply:
        self.calls.append(call)
        self.clock.t += VERIFY_CALL_S
        raise RequestError(ErrorCode.UNAVAILABLE, DEADLINE_EXCEEDED)


def test_resends_are_bounded_by_the_progress_time_alone_and_the_session_is_closed() -> None:
    """Not by the retries in a row (one allowed here): a resend costs the server no work."""
    clock = Clock()
    verifier = AlwaysLate(clock)
    budget = ProgressBudget(max_reconnects=1, timeout_s=5.0)
    with pytest.raises(NoProgress) as info:
        run_loop(verifier, clock, options=dataclasses.replace(OPTIONS, progress=budget))
    assert info.value.message == (
        "gave up after 5 s without a committed token (0 committed; last error "
        "UNAVAILABLE: Deadline Exceeded)"
    )
    assert len(verifier.calls) == 5  # ending at 1.25, 2.25, 3.25, 4.25 and 5.25 s
    assert verifier.closed == ["s"]  # the server holds it, busy: its KV freed now


class BoundedAlwaysLate(Verifier):
    """A verifier that can wait less than its request timeout (``verify_within``, as the
    gRPC client): every call outlives the time it is given, at most ``REQUEST_S``."""

    REQUEST_S = 2.0

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self.waits: list[float] = []

    def verify(self, call: VerifyCall) -> VerifyReply:
        return self.verify_within(call, self.REQUEST_S)

    def verify_within(
        self, call: VerifyCall, timeout_s: float, cancel: threading.Event | None = None
    ) -> VerifyReply:
        self.calls.append(call)
        self.waits.append(timeout_s)
        self.clock.t += min(timeout_s, self.REQUEST_S)
        raise RequestError(ErrorCode.UNAVAILABLE, DEADLINE_EXCEEDED)


def test_no_sending_waits_past_the_progress_time() -> None:
    """Each sending waits what is left of the budget, at most a request timeout: the last
    one 0.75 s, and the generation gives up at 5 s, not at 6.25 s (a whole request timeout
    after the last check, as the calls past their deadline used to wait)."""
    clock = Clock()
    verifier = BoundedAlwaysLate(clock)
    budget = ProgressBudget(timeout_s=5.0)
    with pytest.raises(NoProgress, match="gave up after 5 s"):
        run_loop(verifier, clock, options=dataclasses.replace(OPTIONS, progress=budget))
    assert verifier.waits == [4.75, 2.75, 0.75]  # drafted by 0.25 s; then at 2.25, 4.25 s
    assert clock.t == 5.0
    assert verifier.closed == ["s"]
