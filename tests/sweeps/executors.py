"""A sweep executor for tests: results come back out of order, as a process pool's may."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any


class ReversedExecutor:
    """Runs every item in this process and reports the results last item first."""

    def map_unordered(
        self, fn: Callable[[Any], Any], items: Sequence[Any]
    ) -> Iterator[tuple[int, Any]]:
        results = [(i, fn(item)) for i, item in enumerate(items)]
        yield from reversed(results)
