"""Running float sums with exact rounding, so metric totals do not depend on the order
records arrive in."""

from __future__ import annotations

import math


class ExactSum:
    """Running float sum with exact rounding (``math.fsum`` semantics, order-independent)."""

    __slots__ = ("_partials",)

    def __init__(self) -> None:
        self._partials: list[float] = []

    def add(self, x: float) -> None:
        partials = self._partials
        i = 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                partials[i] = lo
                i += 1
            x = hi
        del partials[i:]
        partials.append(x)

    def merge(self, other: ExactSum) -> None:
        """Add ``other``'s running sum (exactly)."""
        for part in other._partials:
            self.add(part)

    @property
    def partials(self) -> tuple[float, ...]:
        """Non-overlapping partial sums whose exact total is the running sum."""
        return tuple(self._partials)

    @property
    def value(self) -> float:
        return math.fsum(self._partials)
