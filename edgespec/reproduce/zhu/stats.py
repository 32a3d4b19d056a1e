"""How Zhu et al.'s figure values are read off the draws.

Every figure value is a median over the draws (the paper does not say how its points
aggregate; the uniform split's latency is heavy-tailed in the worst user's fade, so a mean
over a few dozen draws follows its deepest fade): a latency is the median latency, a
reduction the median of the per-draw reductions (baseline − proposed) / baseline, shown
with the 10th–90th percentiles (none from one draw: :data:`ONE_DRAW`) and the reduction of
the mean latencies beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

Draws = Sequence[Mapping[str, float]]
ONE_DRAW = "1 draw, no spread"
"""What a reduction's per-draw percentiles read where the run has one draw."""


def median(draws: Draws, key: str) -> float:
    """The median over draws of one latency."""
    return float(np.median([d[key] for d in draws]))


def reduction(draws: Draws, base: str, ours: str) -> tuple[float, float, float, float]:
    """(median, 10th and 90th percentile of the per-draw reductions; the reduction of the
    mean latencies)."""
    per_draw = [(d[base] - d[ours]) / d[base] for d in draws]
    lo, mid, hi = np.percentile(per_draw, [10, 50, 90])
    of_means = 1.0 - np.mean([d[ours] for d in draws]) / np.mean([d[base] for d in draws])
    return float(mid), float(lo), float(hi), float(of_means)
