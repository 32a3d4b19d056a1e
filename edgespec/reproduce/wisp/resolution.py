"""One rule for a direction read off values measured to a known resolution (W4's knees,
W6's FPRs): each value is a :class:`Span`, where the method measuring it puts it (a knee
interpolated between two grid points lies anywhere between them; a predictor's held-out
FPR anywhere over the cuts its threshold rule cannot tell apart). Two values are ordered
only where their spans do not overlap; where they do, the order is the method's, not a
measurement, and the direction is *not comparable (within resolution)*: neither a hold nor a
miss, its cause said (:data:`WITHIN_RESOLUTION`). Spans that only touch (a grid point
between two knees) are ordered: the grid measured it there."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

WITHIN_RESOLUTION = "not comparable (within resolution)"
"""How a row whose direction the rule leaves open says so (its ``ours`` cell and note)."""


@dataclass(frozen=True, slots=True)
class Span:
    """Where a measured value can lie, from ``lo`` to ``hi`` (either may be infinite)."""

    lo: float
    hi: float


def overlap(a: Span, b: Span) -> bool:
    """``a`` and ``b`` share more than an end point."""
    return a.lo < b.hi and b.lo < a.hi


def below(low: Span, high: Span) -> bool | None:
    """Whether the value measured as ``low`` lies below the one measured as ``high``:
    ``None`` where their spans overlap (within resolution)."""
    if overlap(low, high):
        return None
    return low.hi <= high.lo


def all_below(verdicts: Iterable[bool | None]) -> bool | None:
    """Several orders at once: ``False`` where any measured order is wrong, else ``None``
    where any is within resolution, else ``True``."""
    seen = list(verdicts)
    if False in seen:
        return False
    return None if None in seen else True


def quotient_span(num: int, den: int) -> Span:
    """Where the quotient of two capacities lies: a capacity search finds the most devices
    that meet the SLO, an integer ``n`` of a true capacity in [n, n + 1)."""
    return Span(num / (den + 1), (num + 1) / den)


def widens(spans: list[Span]) -> bool:
    """A curve widens over its points: the last measurably above the first, and no step
    measurably down (a step within resolution is not a fall)."""
    falls = any(below(b, a) for a, b in pairwise(spans))
    return below(spans[0], spans[-1]) is True and not falls
