"""Padded batch pricing (edgespec.hardware.batch_pricing) on a hand-built batch: the totals
the cost model is called with, and the seconds a padded batch costs beyond a summed one."""

from __future__ import annotations

import pytest

from edgespec.hardware.batch_pricing import padded_batch_time_s, padded_totals
from edgespec.hardware.cost_models import WispCost
from edgespec.policies.estimator import WispCoefficients

# (new, cached) per entry: two 5-token blocks after 100 and 20 cached, one 3-token block
# after 300. Summed: 13 new, 105·5 + 25·5 + 303·3 = 1559 interactions, 420 cached.
# Padded to N = 5, C = 300: 3·5 = 15 new, 3·305·5 = 4575 interactions, 3·300 = 900 cached.
BATCH = [(5, 100), (5, 20), (3, 300)]
COST = WispCost(WispCoefficients(a_s=1e-3, b_compute_s=1e-6, b_read_s=1e-5, c_s=0.01))


class _Recording:
    """A cost model that keeps the totals it is called with."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int, int]] = []

    def batch_time_s(
        self, batch_size: int, num_linear: int, num_interactions: int, num_cached: int
    ) -> float:
        self.calls.append((batch_size, num_linear, num_interactions, num_cached))
        return 0.0


def test_padded_totals_by_hand() -> None:
    assert padded_totals(BATCH) == (3, 15, 4575, 900)
    assert padded_totals([]) == (0, 0, 0, 0)
    assert padded_totals([(7, 40)]) == (1, 7, 47 * 7, 40)  # one entry: nothing to pad


def test_the_cost_model_gets_the_padded_totals() -> None:
    cost = _Recording()
    padded_batch_time_s(cost, iter(BATCH))
    assert cost.calls == [(3, 15, 4575, 900)]


def test_padded_costs_the_pad_rows_more_than_summed() -> None:
    summed = COST.batch_time_s(3, 13, 1559, 420)
    padded = padded_batch_time_s(COST, BATCH)
    # 2 more new tokens, 3016 more interactions, 480 more cached tokens:
    # 2·1e-3 + 3016·1e-6 + 480·1e-5 = 0.009816 s
    assert padded - summed == pytest.approx(0.009816, rel=1e-12)
    assert summed == pytest.approx(13e-3 + 1559e-6 + 420e-5 + 0.01, rel=1e-12)


def test_equal_lengths_cost_the_same_padded_or_summed() -> None:
    same = [(4, 50)] * 3
    assert padded_batch_time_s(COST, same) == COST.batch_time_s(3, 12, 3 * 54 * 4, 150)
