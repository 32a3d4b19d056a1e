"""A verify call bounded by what is left of a budget (``verify_bounded``) reaches the gRPC
client through every wrapper the drafter and the endpoint put around it (the endpoint's
server watch and session tracker, ``edgespec draft``'s whole closes, the emulated link):
a wrapper without ``verify_within`` would let the call wait a whole request timeout. A
verifier that cannot bound it (in-process) is called plainly; no time left is a deadline
at once (0 s), never a negative one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from edgespec.core.types import VerifyResult
from edgespec.runtime.commands.closed_whole import ClosedWhole
from edgespec.runtime.edge.bounded_calls import BoundedVerify, verify_bounded
from edgespec.runtime.errors import DEADLINE_EXCEEDED, ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall, VerifyOutcome, VerifyReply
from edgespec.runtime.openai_api.server_watch import REACHABLE, ServerWatch
from edgespec.runtime.openai_api.session_tracker import SessionTracker
from edgespec.runtime.wire.emulated_link import EmulatedLinkVerifier, LinkEmulation

CALL = VerifyCall(session_id="s", prefix_len=3, draft_token_ids=(4, 5))
RESULT = VerifyResult(2, 2, None, 6, (4, 5))
REPLY = VerifyReply(VerifyOutcome(RESULT, (4, 5, 6), False, 3), 0.0, 0.0, 1)


class Plain:
    """A verifier without a bound of its own (as the in-process one)."""

    def __init__(self) -> None:
        self.verified: list[VerifyCall] = []

    def verify(self, call: VerifyCall) -> VerifyReply:
        self.verified.append(call)
        return REPLY


class Bounded(Plain):
    """One that can wait less (as the gRPC client): it answers after ``late_s``, so a call
    given less fails as one past its deadline."""

    def __init__(self, late_s: float = 0.0) -> None:
        super().__init__()
        self.late_s = late_s
        self.waits: list[float] = []

    def verify_within(
        self, call: VerifyCall, timeout_s: float, cancel: threading.Event | None = None
    ) -> VerifyReply:
        self.waits.append(timeout_s)
        if timeout_s < self.late_s:
            raise RequestError(ErrorCode.UNAVAILABLE, DEADLINE_EXCEEDED)
        return self.verify(call)


def _watched(inner: Any) -> Any:
    (watched,) = ServerWatch(("a:1",)).watched((inner,))
    return watched


def _linked(inner: Any) -> Any:
    return EmulatedLinkVerifier(inner, LinkEmulation(), np.random.default_rng(0))


WRAPPERS: dict[str, Callable[[Any], Any]] = {
    "server-watch": _watched,
    "session-tracker": SessionTracker,
    "closed-whole": lambda inner: ClosedWhole(inner, close_timeout_s=1.0),
    "emulated-link": _linked,
}


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_every_wrapper_passes_the_bound_on(wrap: Callable[[Any], Any]) -> None:
    inner = Bounded()
    wrapped = wrap(inner)
    bounded = isinstance(wrapped, BoundedVerify)  # else the call would wait a whole timeout
    assert bounded
    assert verify_bounded(wrapped, CALL, 1.5) == REPLY
    assert (inner.waits, inner.verified) == ([1.5], [CALL])


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS.keys())
def test_a_wrapped_plain_verifier_is_called_plainly(wrap: Callable[[Any], Any]) -> None:
    inner = Plain()
    assert verify_bounded(wrap(inner), CALL, 1.5) == REPLY
    assert inner.verified == [CALL]


def test_no_time_left_is_a_deadline_at_once() -> None:
    inner = Bounded(late_s=0.0)
    assert verify_bounded(inner, CALL, -0.25) == REPLY
    assert inner.waits == [0.0]


def test_the_watch_takes_a_bounded_call_past_its_deadline_for_no_outage() -> None:
    """As a plain call past its deadline: the server took it (a busy pass), so it stays
    ``reachable``; the call answered in time is told."""
    watch = ServerWatch(("a:1",))
    (watched,) = watch.watched((Bounded(late_s=1.0),))
    with pytest.raises(RequestError) as info:
        verify_bounded(watched, CALL, 0.5)
    assert info.value.past_deadline
    assert watch.seen()[0].told_s is None  # told nothing
    assert verify_bounded(watched, CALL, 1.5) == REPLY
    assert watch.seen()[0].state == REACHABLE and watch.seen()[0].told_s is not None
