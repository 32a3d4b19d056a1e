"""Integer shares of a whole: largest-remainder apportionment."""

from __future__ import annotations

from collections.abc import Sequence


def largest_remainder(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` split into integers in proportion to ``weights``: each gets the integer
    part of its quota, and what is left goes one each to the largest remainders (ties in
    order)."""
    whole = sum(weights)
    quotas = [total * w / whole for w in weights]
    counts = [int(q) for q in quotas]
    left = total - sum(counts)
    for i in sorted(range(len(quotas)), key=lambda i: -(quotas[i] - counts[i]))[:left]:
        counts[i] += 1
    return counts
