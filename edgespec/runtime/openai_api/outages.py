"""The endpoint's outages in its log: a stretch with no verification server reachable, in
which requests are answered 503 (after ``--retry-timeout-s`` each; at once when every
server has been unreachable for longer: :meth:`.health.Health.refuse_if_hopeless`). One
line as the first such 503 is answered, one when a server answers again (how long there
was none, how many requests were answered 503), never a line per request. A server that
comes and goes at line rate has at most one outage logged per
:data:`~.throttle.LOG_INTERVAL_S` (:class:`~.throttle.Throttle`), the next logged one
saying how many were not."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from edgespec.runtime.openai_api.throttle import LOG_INTERVAL_S, Throttle

LOG = logging.getLogger(__name__)


@dataclass(slots=True)
class _Outage:
    """The open outage: since when no server was reachable, the requests answered 503 in
    it, and whether its first line was logged (else its last is not either)."""

    since_s: float
    num_refused: int
    logged: bool


class OutageLog:
    """The open outage, if any, and its two lines; told from any thread, timed on
    ``clock`` (seconds, monotonic)."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, interval_s: float = LOG_INTERVAL_S
    ) -> None:
        self._clock = clock
        self._throttle = Throttle(interval_s, clock)
        self._lock = threading.Lock()
        self._open: _Outage | None = None

    def refused(self, message: str, down_since_s: float) -> None:
        """A request was answered 503 (``message``) with no server reachable since
        ``down_since_s``: counted in the open outage, or opening one (its line logged
        unless the throttle holds it)."""
        with self._lock:
            if self._open is not None:
                self._open.num_refused += 1
                return
            count = self._throttle.due()
            self._open = _Outage(down_since_s, 1, count is not None)
        if count is None:
            return
        more = f"; {count - 1} more since the last such line, not logged" if count > 1 else ""
        LOG.warning("the OpenAI-compatible endpoint answered a request 503: %s; no verification "
                    "server has been reachable for %.1f s (one line when one answers again)%s",
                    message, self._clock() - down_since_s, more)  # fmt: skip

    def answered(self, address: str, now_s: float) -> None:
        """The server at ``address`` answered a call at ``now_s``: the open outage, if any,
        is over."""
        with self._lock:
            outage, self._open = self._open, None
        if outage is None or not outage.logged:
            return
        num = outage.num_refused
        LOG.warning("the verification server %s answers again: the endpoint had none reachable "
                    "for %.1f s and answered %d request%s 503 meanwhile", address,
                    now_s - outage.since_s, num, "" if num == 1 else "s")  # fmt: skip
