"""WISP's capacity with the unfinished requests counted: the violation rate over every
arrival (the unfinished requests already sure to miss as misses, the rest as hits), its
error where no arrival had a target, and the REPORT.md line."""

from __future__ import annotations

import dataclasses

import pytest

from edgespec.core.types import RequestRecord, UnfinishedCount
from edgespec.metrics.summary import summarize
from edgespec.reproduce.wisp.unfinished import UnfinishedSensitivity, arrival_violation


def _finished(met: bool) -> RequestRecord:
    """A finished request of 10 tokens in 1 s of a 9 tok/s class (``met``) or 11 tok/s."""
    return RequestRecord("r", "c", "x", 0, 0.0, 0.5, 1.0, 5, 10, 3, 6, 4, 9.0 if met else 11.0)


def test_the_rate_counts_the_sure_misses_and_not_the_others() -> None:
    finished = [_finished(True)] * 6 + [_finished(False)] * 2
    # 8 finished (2 missed: 25%) and 4 unfinished with a target, 1 of them sure to miss
    metrics = summarize(finished, [], 1.0, 1, unfinished=UnfinishedCount(5, 4, 1))
    assert metrics.slo_violation_rate == 0.25
    assert arrival_violation(metrics) == pytest.approx(3 / 12)
    sure = summarize(finished, [], 1.0, 1, unfinished=UnfinishedCount(4, 4, 4))
    assert arrival_violation(sure) == pytest.approx(6 / 12)


def test_the_rate_is_undefined_without_the_unfinished_counted() -> None:
    metrics = summarize([_finished(True)], [], 1.0, 1)
    with pytest.raises(ValueError, match="over the arrivals undefined: no request with an SLO"):
        arrival_violation(metrics)
    counted = dataclasses.replace(metrics, slo_attainment_at_most=0.75)
    assert arrival_violation(counted) == 0.25


def test_the_report_line() -> None:
    line = UnfinishedSensitivity(1, 20.0, 0.05, 68, None).line()
    assert line == (
        "**unfinished requests** (chosen: Eq. 20 counts finished requests only): WISP's "
        "capacity (ε = 5% over all classes pooled, late-request rule “first”) with devices of "
        "mixed classes, seed 1, 20 s runs: 68 devices counting finished requests (as every "
        "claim), 0 with the unfinished ones already sure to miss counted as misses."
    )
