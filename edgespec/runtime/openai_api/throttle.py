"""Log lines that clients can cause at line rate, let through at most one per interval.

A flood of connections that ``accept()`` cannot take (:class:`.descriptors.AcceptErrorLog`)
or of malformed HTTP requests (:class:`.connections.BoundedH11Protocol`) would otherwise
write a line each, and a hostile client could fill the device's log. Each such kind of line
has its :class:`Throttle`: the first occurrence is logged, later ones within
``LOG_INTERVAL_S`` are only counted, and the next line logged says how many there were. So
has each kind of 502 a request gets when the verification server refuses the endpoint's own
credentials (:class:`RefusedCredentials`). A line says what the client got
(:func:`client_got`): a request answered with the error's status, or a stream answered 200
already and ended with the error's event.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from edgespec.runtime.openai_api.errors import ApiError

LOG = logging.getLogger(__name__)

LOG_INTERVAL_S = 10.0
"""The least time between two log lines of one kind."""


class Throttle:
    """One log line at most every ``interval_s`` of ``clock``, counting the occurrences in
    between."""

    def __init__(
        self, interval_s: float = LOG_INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._last: float | None = None
        self._count = 0

    def due(self) -> int | None:
        """Count one occurrence; when its line may be logged now, how many occurrences
        there were since the last line logged (this one included), else ``None``."""
        self._count += 1
        now = self._clock()
        if self._last is not None and now - self._last < self.interval_s:
            return None
        count, self._count, self._last = self._count, 0, now
        return count


ENDPOINT = "the OpenAI-compatible endpoint"


def client_got(status: int, code: str, streamed: bool) -> str:
    """What a failed request's client got, as a log line says it: ``answered a request
    502``, or (``streamed``: its stream was answered 200, then ended with the error's event)
    ``ended a stream (answered 200 already) with an unauthenticated error``."""
    if not streamed:
        return f"answered a request {status}"
    article = "an" if code[:1] in ("a", "e", "i", "o", "u") else "a"
    return f"ended a stream (answered 200 already) with {article} {code or 'server'} error"


ADVICE = {
    "unauthenticated": "its clients cannot fix this: restart the endpoint with an --auth-token "
    "the server takes"
}
"""What a :class:`RefusedCredentials` line advises, by the refusal's code."""


class RefusedCredentials:
    """The verification server refusing the endpoint's own credentials (its ``--auth-token``
    unknown or revoked, ``UNAUTHENTICATED``; ``PERMISSION_DENIED``): every request then fails
    with a 502 its client cannot fix, so the device's log says so, one line per kind of
    refusal at most every ``interval_s`` (a :class:`Throttle` each), counting the others."""

    def __init__(
        self, interval_s: float = LOG_INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self._throttles: dict[str, Throttle] = {}
        self._lock = threading.Lock()  # requests fail in worker threads of their own

    def note(self, error: ApiError, streamed: bool = False) -> None:
        """Log ``error`` (a request's failure; ``streamed``: the error event its stream,
        answered 200, ended with) when it is such a 502 and its line is due."""
        if error.status != 502:
            return
        kind = error.code or ""
        with self._lock:
            throttle = self._throttles.setdefault(kind, Throttle(self._interval_s, self._clock))
            count = throttle.due()
        if count is None:
            return
        fix = ADVICE.get(kind, "the endpoint's credentials, not the request, were refused")
        more = f"; {count - 1} more since the last such line, not logged" if count > 1 else ""
        LOG.warning("%s %s: %s; %s%s", ENDPOINT, client_got(error.status, kind, streamed),
                    error.message, fix, more)  # fmt: skip
