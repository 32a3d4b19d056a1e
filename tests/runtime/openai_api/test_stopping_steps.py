"""The steps of a stopping endpoint on a clock moved by hand (:mod:`.stopping`): the first
signal says what it waits for and waits at most ``drain_s``; a second signal, or the drain
deadline, cancels what is left, then waits at most ``cancel_s`` (a third signal changes
nothing); what still runs then is left behind, said in one line. The processes themselves:
:mod:`.test_stopping`."""

from __future__ import annotations

import signal

import pytest

from edgespec.runtime.openai_api.stopping import POLL_S, Stopped, serve_until_stopped

TERM, INT = int(signal.SIGTERM), int(signal.SIGINT)


def _at(time_s: float) -> object:
    """``time_s``, to within one look (``POLL_S``: what ends is seen at the next)."""
    return pytest.approx(time_s, abs=POLL_S + 1e-6)


class Scene:
    """A clock, the signals sent at given times, an endpoint whose server thread ends at
    ``ends_at_s`` (``None``: once its requests end) and whose ``num`` requests end at
    ``finish_at_s``, or ``cancel_takes_s`` after they are cancelled (``None``: never)."""

    def __init__(self, signals: dict[float, int], num: int, finish_at_s: float | None,
                 cancel_takes_s: float | None = 0.5) -> None:  # fmt: skip
        self.now = 0.0
        self.signals = dict(signals)
        self.num = num
        self.finish_at_s = finish_at_s
        self.cancel_takes_s = cancel_takes_s
        self.cancelled_at: float | None = None
        self.stopping_at: float | None = None
        self.said: list[tuple[float, str]] = []

    # the signals
    def wait(self, timeout_s: float) -> int | None:
        self.now += timeout_s
        due = [t for t in self.signals if t <= self.now + 1e-9]
        return self.signals.pop(min(due)) if due else None

    # the server thread
    @property
    def alive(self) -> bool:
        return self.stopping_at is None or self.generating() > 0

    def begin_stop(self) -> None:
        self.stopping_at = self.now

    # the requests in flight
    def _end_s(self) -> float | None:
        ends = [t for t in (self.finish_at_s,) if t is not None]
        if self.cancelled_at is not None and self.cancel_takes_s is not None:
            ends.append(self.cancelled_at + self.cancel_takes_s)
        return min(ends, default=None)

    def generating(self) -> int:
        end = self._end_s()
        return 0 if end is not None and self.now >= end else self.num

    def count(self) -> int:
        return self.generating()

    def cancel_all(self) -> int:
        self.cancelled_at = self.now
        return self.generating()

    def say(self, line: str) -> None:
        self.said.append((round(self.now, 1), line))


def _stop(scene: Scene) -> Stopped:
    return serve_until_stopped(scene, scene, scene.wait, scene.say, drain_s=30.0,
                               cancel_s=10.0, clock=lambda: scene.now)  # fmt: skip


def test_requests_that_finish_within_the_drain_are_waited_for() -> None:
    scene = Scene({5.0: TERM}, num=2, finish_at_s=12.0)
    assert _stop(scene) == Stopped(TERM)
    assert scene.said == [(5.0, "stopping: finishing 2 requests in flight for at most 30 s "
                                "(Ctrl-C again cancels them)")]  # fmt: skip
    assert scene.cancelled_at is None and scene.now == _at(12.0)


def test_without_requests_in_flight_it_stops_at_once_saying_nothing() -> None:
    scene = Scene({5.0: INT}, num=0, finish_at_s=None)
    assert _stop(scene) == Stopped(INT)
    assert scene.said == [] and scene.now == _at(5.0)


def test_the_drain_is_bounded_then_what_is_left_is_cancelled() -> None:
    """A 41 s generation held Ctrl-C for 46.8 s, silently."""
    scene = Scene({1.0: INT}, num=1, finish_at_s=41.0)
    assert _stop(scene) == Stopped(INT)
    assert scene.said == [
        (1.0, "stopping: finishing 1 request in flight for at most 30 s (Ctrl-C again "
              "cancels it)"),
        (31.0, "cancelling 1 request still in flight after 30 s"),
    ]  # fmt: skip
    assert scene.cancelled_at == _at(31.0) and scene.now == _at(31.5)


def test_a_second_signal_cancels_at_once_and_the_first_decides_the_status() -> None:
    scene = Scene({1.0: TERM, 4.0: INT}, num=2, finish_at_s=41.0)
    assert _stop(scene) == Stopped(TERM)
    assert [line for _, line in scene.said][1:] == ["cancelling 2 requests still in flight"]
    assert scene.cancelled_at == _at(4.0) and scene.now == _at(4.5)


def test_generations_that_do_not_end_once_cancelled_are_left_after_cancel_s() -> None:
    """A third signal while they are awaited changes nothing: the wait is bounded."""
    scene = Scene({1.0: INT, 2.0: INT, 5.0: INT}, num=1, finish_at_s=None, cancel_takes_s=None)
    assert _stop(scene) == Stopped(INT, num_abandoned=1)
    assert scene.said[1:] == [
        (2.0, "cancelling 1 request still in flight"),
        (12.0, "1 request did not end within 10 s of being cancelled: exiting without it (the "
               "server closes its session after its session_timeout_s)"),
    ]  # fmt: skip


def test_a_server_thread_that_ends_by_itself_is_no_signal() -> None:
    scene = Scene({}, num=0, finish_at_s=None)
    scene.stopping_at = 0.0  # uvicorn gave up on its own
    assert _stop(scene) == Stopped(None)
