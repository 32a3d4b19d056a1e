"""A generation cancelled (its client gone) while the server is unreachable stops within
one retry backoff, not after ``retry_timeout_s``: both retry loops wait on the cancel
event, and every session that may have opened is closed on the way out. Without an event
they sleep and retry as before. The backoff here is 2 s, the retry budget 3 s: a loop
that slept through a backoff would take 2 s, one deaf to the event would give up with
``UNAVAILABLE`` after 4 s."""

from __future__ import annotations

import threading
import time

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.edge.reconnect import Cancelled, open_retrying, reopen
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from tests.runtime.round_fakes import Clock, Drafter, Verifier

BACKOFF_S = 2.0
TIMEOUT_S = 3.0
ONE_STEP_S = 1.0  # well under one backoff
SPEC = SessionSpec("s", "edge-0", (5,), SamplingParams(max_new_tokens=7))


class Unreachable(Verifier):
    """A server gone down after it opened the generation's first session: opens after
    the first fail ``UNAVAILABLE`` (as does every open with ``down_from`` 0), and the
    ``cancel_at``-th of all opens sets ``cancel`` (the client leaves meanwhile)."""

    def __init__(self, cancel: threading.Event, cancel_at: int, down_from: int = 1) -> None:
        super().__init__(Clock())
        self.cancel, self.cancel_at, self.down_from = cancel, cancel_at, down_from

    def open(self, spec: SessionSpec) -> None:
        if len(self.specs) + 1 == self.cancel_at:
            self.cancel.set()
        if len(self.specs) < self.down_from:
            super().open(spec)
            return
        self.specs.append(spec)
        raise RequestError(ErrorCode.UNAVAILABLE, "failed to connect to all addresses")


def test_a_reopen_cancelled_while_it_waits_stops_at_once_and_closes_its_attempt() -> None:
    cancel = threading.Event()
    verifier = Unreachable(cancel, cancel_at=0, down_from=0)
    leaves = threading.Timer(0.3, cancel.set)  # during the wait after the first attempt
    started = time.monotonic()
    leaves.start()
    with pytest.raises(Cancelled, match="cancelled while retrying an unreachable server"):
        reopen(verifier, SPEC, (6,), time.monotonic, 1, TIMEOUT_S, BACKOFF_S, cancel=cancel)
    assert 0.3 <= time.monotonic() - started < 0.3 + ONE_STEP_S
    assert [s.session_id for s in verifier.specs] == ["s#r1.1"]
    assert verifier.closed == ["s#r1.1"]  # it may have opened before its answer was lost


def test_a_reopen_cancelled_before_it_starts_opens_nothing() -> None:
    cancel = threading.Event()
    cancel.set()
    verifier = Unreachable(cancel, cancel_at=0, down_from=0)
    with pytest.raises(Cancelled, match="cancelled before its session was reopened"):
        reopen(verifier, SPEC, (6,), time.monotonic, 1, TIMEOUT_S, BACKOFF_S, cancel=cancel)
    assert (verifier.specs, verifier.closed) == ([], [])


def test_a_cancelled_first_open_stops_within_a_backoff_and_is_closed() -> None:
    cancel = threading.Event()
    verifier = Unreachable(cancel, cancel_at=0, down_from=0)
    leaves = threading.Timer(0.3, cancel.set)  # during the wait after the first attempt
    started = time.monotonic()
    leaves.start()
    with pytest.raises(Cancelled):
        open_retrying(verifier, SPEC, time.monotonic, TIMEOUT_S, BACKOFF_S, cancel)
    assert 0.3 <= time.monotonic() - started < 0.3 + ONE_STEP_S
    assert [s.session_id for s in verifier.specs] == ["s"]
    assert verifier.closed == ["s"]  # the last attempt's outcome is unknown


def test_without_an_event_the_retries_sleep_their_backoff_until_the_timeout() -> None:
    verifier = Unreachable(threading.Event(), cancel_at=0, down_from=0)
    ticks = iter([0.0, 0.0, 0.1, 0.3])  # the deadline 0.2 s after the start, then each attempt
    started = time.monotonic()
    with pytest.raises(RequestError) as info:
        open_retrying(verifier, SPEC, lambda: next(ticks), 0.2, 0.05)
    assert info.value.code is ErrorCode.UNAVAILABLE
    assert len(verifier.specs) == 3 and time.monotonic() - started >= 0.1  # two backoffs


def test_a_generation_cancelled_while_reconnecting_ends_and_closes_its_sessions() -> None:
    """The first round finds the server down; the drafter reopens its session every
    backoff; the client leaves during the first attempt: the generation ends without
    waiting, its first session and the attempt closed."""
    cancel = threading.Event()
    verifier = Unreachable(cancel, cancel_at=2)
    verifier.failures = [ErrorCode.UNAVAILABLE]
    options = DraftOptions("s", retry_timeout_s=TIMEOUT_S, retry_backoff_s=BACKOFF_S,
                           cancel=cancel)  # fmt: skip
    started = time.monotonic()
    with pytest.raises(Cancelled):
        generate(verifier, Drafter(verifier.clock), (5,), SPEC.sampling, options,
                 clock=time.monotonic)  # fmt: skip
    assert time.monotonic() - started < ONE_STEP_S
    assert [s.session_id for s in verifier.specs] == ["s", "s#r1.1"]
    assert verifier.closed == ["s", "s#r1.1", "s"]  # "s" again on the way out
