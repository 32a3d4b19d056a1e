"""How ``edgespec draft --serve-openai`` stops on Ctrl-C or SIGTERM (``kill PID``, systemd,
``docker stop``), the two alike.

The first signal closes the listening socket (a new connection is refused) and says what it
waits for, ``stopping: finishing 2 requests in flight for at most 30 s (Ctrl-C again cancels
them)``; the requests in flight finish as usual, each closing its session on the
verification server. A second signal, or ``DRAIN_TIMEOUT_S`` passing first, cancels those
still running (:meth:`.in_flight.InFlight.cancel_all`: their clients get a 503, a stream an
error event and ``[DONE]``, their sessions closed); the process then waits at most
``CANCEL_TIMEOUT_S`` for them to end. The signal that began it decides the exit status
(the command's: 130, 143)."""

from __future__ import annotations

import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

DRAIN_TIMEOUT_S = 30.0
"""How long a stopping endpoint lets its requests in flight finish before it cancels them
(a second Ctrl-C or SIGTERM cancels them at once)."""

CANCEL_TIMEOUT_S = 10.0
"""How long it then waits for the cancelled generations to end, each at its next round: one
waiting on a server that does not answer may take up to its request timeout, and past this
the process exits without it (its session left to the server's ``session_timeout_s``)."""

POLL_S = 0.05
"""How often a stopping endpoint looks whether what it waits for has ended."""

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Serving(Protocol):
    """What stopping needs of the endpoint's server thread (:class:`.serve.ApiThread`)."""

    @property
    def alive(self) -> bool: ...

    def begin_stop(self) -> None: ...


class Requests(Protocol):
    """What stopping needs of the requests in flight (:class:`.in_flight.InFlight`)."""

    def count(self) -> int: ...

    def generating(self) -> int: ...

    def cancel_all(self) -> int: ...


class StopSignals:
    """SIGINT and SIGTERM while the endpoint serves, queued for the main thread to act on in
    turn (no exception raised in it mid-step); the previous handlers put back on exit. A
    signal the process was started ignoring (a background job's SIGINT) stays ignored."""

    def __init__(self) -> None:
        self._received: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is not threading.main_thread():
            return self  # only the main thread may set handlers: an embedding program's own
        for sig in STOP_SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                self._previous[sig] = signal.signal(sig, self._receive)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _receive(self, signum: int, frame: object) -> None:
        self._received.put(signum)  # SimpleQueue.put is safe in a signal handler

    def wait(self, timeout_s: float) -> int | None:
        """The next signal received within ``timeout_s``, else ``None``."""
        try:
            return self._received.get(timeout=max(timeout_s, 0.0))
        except queue.Empty:
            return None


@dataclass(frozen=True, slots=True)
class Stopped:
    """How serving ended: the signal that stopped it (``None``: the server thread ended by
    itself), and how many cancelled generations had not ended when the process gave up
    waiting for them (``num_abandoned``: the process should exit without joining them)."""

    signum: int | None
    num_abandoned: int = 0


def _requests(num: int) -> str:
    return f"{num} request{'s' if num != 1 else ''}"


def serve_until_stopped(
    server: Serving,
    in_flight: Requests,
    signals: Callable[[float], int | None],
    say: Callable[[str], None],
    drain_s: float = DRAIN_TIMEOUT_S,
    cancel_s: float = CANCEL_TIMEOUT_S,
    clock: Callable[[], float] = time.monotonic,
) -> Stopped:
    """Serve until the first of ``signals`` (a signal's number, or ``None`` after the
    seconds given), then stop as the module says, each step said through ``say``."""
    first = None
    while first is None:
        if not server.alive:
            return Stopped(None)
        first = signals(POLL_S)
    num = in_flight.count()
    server.begin_stop()
    if num:
        them = "it" if num == 1 else "them"
        say(f"stopping: finishing {_requests(num)} in flight for at most {drain_s:g} s "
            f"(Ctrl-C again cancels {them})")  # fmt: skip
    again = _wait(lambda: not server.alive, signals, clock, clock() + drain_s)
    if again is False:
        return Stopped(first)
    num = in_flight.cancel_all()
    if num:
        why = "" if again else f" after {drain_s:g} s"
        say(f"cancelling {_requests(num)} still in flight{why}")

    def ended() -> bool:
        return not server.alive and not in_flight.generating()

    deadline = clock() + cancel_s
    while _wait(ended, signals, clock, deadline) is True:
        pass  # a third signal changes nothing: the wait is bounded
    left = in_flight.generating()
    if not left:  # at most connections still writing: their thread ends with the process
        return Stopped(first)
    them, their = ("it", "its session") if left == 1 else ("them", "their sessions")
    say(f"{_requests(left)} did not end within {cancel_s:g} s of being cancelled: exiting "
        f"without {them} (the server closes {their} after its session_timeout_s)")  # fmt: skip
    return Stopped(first, left)


def _wait(
    done: Callable[[], bool],
    signals: Callable[[float], int | None],
    clock: Callable[[], float],
    deadline: float,
) -> bool | None:
    """Wait until ``done()``, a signal or ``deadline``: ``False`` when done, ``True`` for a
    signal, ``None`` when the deadline passed."""
    while not done():
        left = deadline - clock()
        if left <= 0:
            return None
        if signals(min(POLL_S, left)) is not None:
            return True
    return False
