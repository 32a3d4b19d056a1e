"""Log lines that clients can cause at line rate, let through at most one per interval.

A flood of connections that ``accept()`` cannot take (:class:`.descriptors.AcceptErrorLog`)
or of malformed HTTP requests (:class:`.connections.BoundedH11Protocol`) would otherwise
write a line each, and a hostile client could fill the device's log. Each such kind of line
has its :class:`Throttle`: the first occurrence is logged, later ones within
``LOG_INTERVAL_S`` are only counted, and the next line logged says how many there were.
"""

from __future__ import annotations

import time
from collections.abc import Callable

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
