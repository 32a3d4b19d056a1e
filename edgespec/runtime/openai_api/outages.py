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
outage's first, or one of its own once a server answers and the interval has passed.

A stream that failed so after its ``200`` (its client got an ``unavailable`` error event,
then ``[DONE]``) is counted the same way, but said as what its client got: a stream ended
with an ``unavailable`` error, not a request answered 503."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.openai_api.throttle import ENDPOINT, LOG_INTERVAL_S, Throttle, client_got

LOG = logging.getLogger(__name__)

UNAVAILABLE_CODE = ErrorCode.UNAVAILABLE.value.lower()
"""The ``code`` of a request's 503 when its server was unreachable (:mod:`.errors`)."""

STREAM_ENDED = client_got(503, UNAVAILABLE_CODE, streamed=True)
"""What a stream's client got when its server was lost after the stream's 200."""


@dataclass(slots=True)
class _Outage:
    """The open outage: since when no server was reachable, the requests answered 503 and
    the streams ended with an ``unavailable`` error in it, and whether its first line was
    logged (else its last is not either)."""

    since_s: float
    num_refused: int
    num_streams_ended: int
    logged: bool


@dataclass(slots=True)
class _Untold:
    """What no line has counted yet: the outages not logged since the last line, and the
    503s in no line (those outages', and those answered while a server was reachable)."""

    num_outages: int = 0
    num_refused: int = 0
    num_streams_ended: int = 0


def _plural(num: int, noun: str) -> str:
    return f"{num} {noun}{'' if num == 1 else 's'}"


def answered(num_refused: int, num_streams_ended: int) -> str:
    """What clients got, in a line: ``answered 2 requests 503``, ``ended 1 stream (answered
    200 already) with an unavailable error``, or both joined by "and"."""
    said = [f"answered {_plural(num_refused, 'request')} 503"] if num_refused else []
    if num_streams_ended:
        said.append(STREAM_ENDED.replace("a stream", _plural(num_streams_ended, "stream")))
    return " and ".join(said) or "answered 0 requests 503"


def untold_line(untold: _Untold, first: bool = False) -> str:
    """How a line says the 503s (and streams ended) no line counted yet, and the outages
    not logged; ``first``: no outage line was logged before it (since the endpoint
    started)."""
    num = untold.num_outages
    outages = f" ({_plural(num, 'outage')} not logged)" if num else ""
    got = answered(untold.num_refused, untold.num_streams_ended)
    since = "since it started" if first else "since its last outage line"
    return f"{since} it {got} that no line counted{outages}"


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
        self._logged_any = False  # an outage line: what an untold count is "since"

    def refused(
        self, message: str, down_since_s: float, reachable: bool = False, streamed: bool = False
    ) -> None:
        """A request was answered 503 (``message``), or (``streamed``) its stream, answered
        200, ended with that error: with no server reachable since ``down_since_s``, counted
        in the open outage, or opening one (its line logged unless the throttle holds it);
        ``reachable`` (a server answered as the request waited: its outage's last line came
        first), counted in the next line logged."""
        with self._lock:
            if reachable:
                self._untold.num_refused += not streamed
                self._untold.num_streams_ended += streamed
                self._say_untold()
            elif self._open is not None:
                self._open.num_refused += not streamed
                self._open.num_streams_ended += streamed
            else:
                self._opened(message, down_since_s, streamed)

    def answered(self, address: str, now_s: float) -> None:
        """The server at ``address`` answered a call at ``now_s``: the open outage, if any,
        is over (its last line logged, or its count kept for the next line logged)."""
        with self._lock:
            outage, self._open = self._open, None
            if outage is not None and outage.logged:
                got = answered(outage.num_refused, outage.num_streams_ended)
                LOG.warning("the verification server %s answers again: the endpoint had none "
                            "reachable for %.1f s and %s meanwhile", address,
                            now_s - outage.since_s, got)  # fmt: skip
                return
            if outage is not None:
                self._untold.num_outages += 1
                self._untold.num_refused += outage.num_refused
                self._untold.num_streams_ended += outage.num_streams_ended
            self._say_untold()

    def _opened(self, message: str, down_since_s: float, streamed: bool) -> None:
        """An outage opened by a 503 (``message``; ``streamed``: a stream ended with it), its
        first line logged when due, with what no line counted yet (under the lock)."""
        logged = self._throttle.due() is not None
        self._open = _Outage(down_since_s, int(not streamed), int(streamed), logged)
        if not logged:
            return
        untold, self._untold = self._untold, _Untold()
        first, self._logged_any = not self._logged_any, True
        untold_count = untold.num_refused or untold.num_streams_ended
        said = f"; {untold_line(untold, first)}" if untold_count else ""
        got = client_got(503, UNAVAILABLE_CODE, streamed)
        LOG.warning("%s %s: %s; no verification server has been reachable for %.1f s (one line "
                    "when one answers again)%s", ENDPOINT, got, message,
                    self._clock() - down_since_s, said)  # fmt: skip

    def _say_untold(self) -> None:
        """Log what no line counted yet, when there is some and a line is due (under the
        lock)."""
        untold = self._untold
        if not (untold.num_refused or untold.num_streams_ended) or self._throttle.due() is None:
            return
        untold, self._untold = self._untold, _Untold()
        first, self._logged_any = not self._logged_any, True
        LOG.warning("%s: %s", ENDPOINT, untold_line(untold, first))
