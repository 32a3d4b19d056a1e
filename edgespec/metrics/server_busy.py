"""Busy time of one server, streamed from its batches.

A server's busy time is the sum of its batches' durations clipped to [0, duration_s]: a
server runs one forward pass at a time, so its batches do not overlap (if a backend
overlapped them, utilization could exceed 1).
"""

from __future__ import annotations

import heapq
import math

from edgespec.metrics.exact_sum import ExactSum


class ServerBusyTime:
    """Busy time of one server, streaming: the ``keep`` latest-ending batches stay exact.

    Older batches are folded into an exact sum of their lengths (clipped below at 0), so
    memory is flat. A run's ``duration_s`` is only known at ``finish``; clipping at it is
    exact as long as no folded batch ends after it, which ``total`` checks.
    """

    __slots__ = ("_folded", "_folded_max_end", "_keep", "_recent")

    def __init__(self, keep: int = 1024) -> None:
        self._folded = ExactSum()
        self._folded_max_end = float("-inf")
        self._keep = keep
        self._recent: list[tuple[float, float]] = []

    def add(self, start_s: float, end_s: float) -> None:
        recent = self._recent
        if len(recent) < self._keep:
            heapq.heappush(recent, (end_s, start_s))
            return
        end, start = heapq.heappushpop(recent, (end_s, start_s))
        if end > self._folded_max_end:
            self._folded_max_end = end
        if end > 0:
            self._folded.add(end - start if start > 0 else end)

    def merge(self, other: ServerBusyTime) -> None:
        """Count ``other``'s batches too (the same server's, from another record stream)."""
        self._folded.merge(other._folded)
        self._folded_max_end = max(self._folded_max_end, other._folded_max_end)
        for end, start in other._recent:
            self.add(start, end)

    def total(self, server_id: int, duration_s: float) -> float:
        if self._folded_max_end > duration_s:
            raise ValueError(
                f"server {server_id}: more than {self._keep} batches end after "
                f"duration_s={duration_s}; the run's duration is too short for its records"
            )
        parts = list(self._folded.partials)
        for end, start in self._recent:
            lo, hi = max(start, 0.0), min(end, duration_s)
            if hi > lo:
                parts.append(hi - lo)
        return math.fsum(parts)
