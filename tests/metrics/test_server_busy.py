"""ServerBusyTime: batch spans clipped to [0, duration_s], exact after folding and merging;
ExactSum: an exactly rounded running sum (docs/METRICS.md)."""

from __future__ import annotations

import math

import pytest

from edgespec.metrics.exact_sum import ExactSum
from edgespec.metrics.server_busy import ServerBusyTime


def test_folded_batches_are_clipped_at_zero() -> None:
    busy = ServerBusyTime(keep=1)
    busy.add(-3.0, -2.0)  # wholly before the run: folded, counts nothing
    busy.add(-1.0, 1.0)  # straddles 0: folded, counts 1.0
    busy.add(1.0, 2.0)  # kept exact
    assert busy.total(0, 2.0) == 2.0
    assert busy.total(0, 1.5) == 1.5


def test_folded_batch_ending_at_the_duration_is_exact() -> None:
    busy = ServerBusyTime(keep=1)
    busy.add(0.0, 1.0)
    busy.add(1.0, 2.0)  # folds the first, which ends exactly at duration_s
    assert busy.total(0, 1.0) == 1.0
    with pytest.raises(
        ValueError, match=r"server 3: more than 1 batches end after duration_s=0.5;"
    ):
        busy.total(3, 0.5)


def test_merge_keeps_the_check_on_the_other_streams_folded_batches() -> None:
    other = ServerBusyTime(keep=1)
    other.add(0.0, 5.0)
    other.add(5.0, 6.0)  # folds (0, 5)
    busy = ServerBusyTime(keep=1)
    busy.merge(other)
    assert busy.total(0, 6.0) == 6.0
    with pytest.raises(
        ValueError, match=r"server 0: more than 1 batches end after duration_s=4.0;"
    ):
        busy.total(0, 4.0)


def test_exact_sum_value_is_correctly_rounded() -> None:
    # partials (1e-16, 1.0, 1e16): a plain left-to-right sum of them gives 1e16
    values = [1e16, 1.0, 1e-16]
    total = ExactSum()
    for v in values:
        total.add(v)
    assert total.value == math.fsum(values) == 1.0000000000000002e16
