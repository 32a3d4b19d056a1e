"""The SLO violation rate of the decided requests (``decided_violation_rate``, what
``edgespec sim --capacity --count-sure-misses`` bounds): the finished requests and the
unfinished ones already sure to miss, those not yet sure left out; its error where the
unfinished requests were not counted or none had a target."""

from __future__ import annotations

import pytest

from edgespec.core.types import RequestRecord
from edgespec.core.unfinished import UnfinishedClass, UnfinishedCount
from edgespec.metrics.summary import summarize
from edgespec.metrics.violation_rates import decided_violation_rate


def _finished(met: bool) -> RequestRecord:
    """A finished request of 10 tokens in 1 s of a 9 tok/s class (``met``) or 11 tok/s."""
    return RequestRecord("r", "c", "x", 0, 0.0, 0.5, 1.0, 5, 10, 3, 6, 4, 9.0 if met else 11.0)


def _count(num_requests: int, num_with_target: int, num_missed: int) -> UnfinishedCount:
    """``num_requests`` unfinished, ``num_with_target`` of class x, ``num_missed`` sure to miss."""
    x = UnfinishedClass("x", 9.0, num_with_target, num_missed)
    return UnfinishedCount(num_requests, (x,) if num_with_target else ())


FINISHED = [_finished(True)] * 6 + [_finished(False)] * 2
"""8 finished requests with a target, 2 of them missed it (25%)."""


@pytest.mark.parametrize(
    ("unfinished", "rate"),
    [
        (_count(5, 4, 1), 3 / 9),  # 1 sure miss joins; the 3 undecided are left out
        (_count(4, 4, 4), 6 / 12),
        (_count(3, 3, 0), 2 / 8),  # none sure: Eq. 20's rate
        (_count(2, 0, 0), 2 / 8),
    ],
)
def test_the_sure_misses_join_the_finished_requests(
    unfinished: UnfinishedCount, rate: float
) -> None:
    metrics = summarize(FINISHED, [], 1.0, 1, unfinished=unfinished)
    assert metrics.slo_violation_rate == 0.25
    assert decided_violation_rate(metrics) == pytest.approx(rate)


def test_only_sure_misses_still_give_a_rate() -> None:
    metrics = summarize([], [], 1.0, 1, unfinished=_count(3, 2, 2))
    assert metrics.slo_violation_rate is None and decided_violation_rate(metrics) == 1.0


@pytest.mark.parametrize("unfinished", [None, _count(3, 2, 0)], ids=["not counted", "none decided"])
def test_the_rate_is_undefined_otherwise(unfinished: UnfinishedCount | None) -> None:
    metrics = summarize([], [], 1.0, 1, unfinished=unfinished)
    with pytest.raises(ValueError, match="of the decided requests undefined: none had an SLO"):
        decided_violation_rate(metrics)
