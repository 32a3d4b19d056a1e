"""The endpoint's outages in its log: a stretch with no verification server reachable, in
which requests are answered 503 (after ``--retry-timeout-s`` each; at once when every
server has been unreachable for longer: :meth:`.health.Health.refuse_if_hopeless`). One
line as the first such 503 is answered, one when a server answers again (how long there
was none, how many requests were answered 503), never a line per request. A server that
comes and goes at line rate has at most one outage logged per
:data:`~.throttle.LOG_INTERVAL_S` (:class:`~.throttle.Throttle`).

Every 503 ``unavailable`` is counted in exactly one line: its outage's last line, or, when
no line counts it (its outage was not logged; it was answered as a server answered again,
after its outage's last line), the next line logged, which says how many such 503s there
were since the last one and in how many outages not logged. That next line is the next
outage's first, or one of its own once a server answers and the interval has passed."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from edgespec.runtime.openai_api.throttle import LOG_INTERVAL_S, Throttle

LOG = logging.getLogger(__name__)

ENDPOINT = "the OpenAI-compatible endpoint"


@dataclass(slots=True)
class _Outage:
    """The open outage: since when no server was reachable, the requests answered 503 in
    it, and whether its first line was logged (else its last is not either)."""

    since_s: float
    num_refused: int
    logged: bool


@dataclass(slots=True)
class _Untold:
    """What no line has counted yet: the outages not logged since the last line, and the
    503s in no line (those outages', and those answered while a server was reachable)."""

    num_outages: int = 0
    num_refused: int = 0


def _plural(num: int, noun: str) -> str:
    return f"{num} {noun}{'' if num == 1 else 's'}"


def untold_line(untold: _Untold) -> str:
    """How a line says the 503s no line counted yet, and the outages not logged."""
    num = untold.num_outages
    outages = f" ({_plural(num, 'outage')} not logged)" if num else ""
    return (f"since its last outage line it answered {_plural(untold.num_refused, 'request')} "
            f"503 that no line counted{outages}")  # fmt: skip


class OutageLog:
    """The open outage, if any, its two lines, and what no line counted yet; told from any
    thread, timed on ``clock`` (seconds, monotonic)."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, interval_s: float = LOG_INTERVAL_S
    ) -> None:
        self._clock = clock
        # its count of occurrences is not read: _Untold says what was not logged
        self._throttle = Throttle(interval_s, clock)
        self._lock = threading.Lock()
        self._open: _Outage | None = None
        self._untold = _Untold()

    def refused(self, message: str, down_since_s: float, reachable: bool = False) -> None:
        """A request was answered 503 (``message``): with no server reachable since
        ``down_since_s``, counted in the open outage, or opening one (its line logged
        unless the throttle holds it); ``reachable`` (a server answered as the request
        waited: its outage's last line came first), counted in the next line logged."""
        with self._lock:
            if reachable:
                self._untold.num_refused += 1
                self._say_untold()
            elif self._open is not None:
                self._open.num_refused += 1
            else:
                self._opened(message, down_since_s)

    def answered(self, address: str, now_s: float) -> None:
        """The server at ``address`` answered a call at ``now_s``: the open outage, if any,
        is over (its last line logged, or its count kept for the next line logged)."""
        with self._lock:
            outage, self._open = self._open, None
            if outage is not None and outage.logged:
                num = _plural(outage.num_refused, "request")
                LOG.warning("the verification server %s answers again: the endpoint had none "
                            "reachable for %.1f s and answered %s 503 meanwhile", address,
                            now_s - outage.since_s, num)  # fmt: skip
                return
            if outage is not None:
                self._untold.num_outages += 1
                self._untold.num_refused += outage.num_refused
            self._say_untold()

    def _opened(self, message: str, down_since_s: float) -> None:
        """An outage opened by a 503 (``message``), its first line logged when due, with what
        no line counted yet (under the lock)."""
        logged = self._throttle.due() is not None
        self._open = _Outage(down_since_s, 1, logged)
        if not logged:
            return
        untold, self._untold = self._untold, _Untold()
        said = f"; {untold_line(untold)}" if untold.num_refused else ""
        LOG.warning("%s answered a request 503: %s; no verification server has been reachable "
                    "for %.1f s (one line when one answers again)%s", ENDPOINT, message,
                    self._clock() - down_since_s, said)  # fmt: skip

    def _say_untold(self) -> None:
        """Log what no line counted yet, when there is some and a line is due (under the
        lock)."""
        if not self._untold.num_refused or self._throttle.due() is None:
            return
        untold, self._untold = self._untold, _Untold()
        LOG.warning("%s: %s", ENDPOINT, untold_line(untold))
