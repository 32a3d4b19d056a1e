"""The one rule for a direction read off values measured to a resolution
(edgespec/reproduce/wisp/resolution.py): ordered where the spans do not overlap, not
comparable where they do; W4's knees on the grid (edgespec/reproduce/wisp/readings.py) and
W6's FPRs over the threshold rule's near-best cuts (study_claims.py) under it, and the knees
off the grid not comparable (setting not reached)."""

from __future__ import annotations

import dataclasses
from typing import Any

from edgespec.learn.stop.study import StopStudy
from edgespec.learn.stop.threshold import ThresholdPlateau
from edgespec.reproduce.claims import Outcome
from edgespec.reproduce.wisp.curve_claims import knee_rows, operating_rows
from edgespec.reproduce.wisp.readings import knee_span, reading_line
from edgespec.reproduce.wisp.resolution import Span, all_below, below, overlap
from edgespec.reproduce.wisp.study_claims import TREES, w6_rows
from tests.reproduce.wisp.results import at_point as _at
from tests.reproduce.wisp.results import metrics, results
from tests.reproduce.wisp.test_predictor_claims import point, study

INF = float("inf")


def test_spans_that_overlap_leave_the_order_open_and_touching_ones_do_not() -> None:
    assert below(Span(0.0, 1.0), Span(2.0, 3.0)) is True
    assert below(Span(2.0, 3.0), Span(0.0, 1.0)) is False
    assert below(Span(0.0, 1.0), Span(1.0, 2.0)) is True  # they touch: a grid point between
    assert below(Span(0.06, 0.23), Span(0.05, 0.22)) is None
    assert below(Span(60, 120), Span(60, 120)) is None  # one grid step
    assert overlap(Span(-INF, 60), Span(-INF, 60)) and not overlap(Span(-INF, 60), Span(60, 120))
    assert all_below([True, None, True]) is None
    assert all_below([None, False]) is False  # a measured wrong order decides
    assert all_below([True, True]) is True


def test_a_knee_spans_the_grid_step_it_was_interpolated_in() -> None:
    grid = (60, 120, 180)
    assert knee_span(63.1, grid) == knee_span(63.3, grid) == Span(60, 120)
    assert knee_span(120.0, grid) == Span(60, 120)  # reached at 120 exactly
    assert knee_span(120.5, grid) == Span(120, 180)
    assert knee_span(60.0, grid) == Span(-INF, 60)  # already at the first point
    assert knee_span(None, grid) == Span(180, INF)  # beyond the range


def _knee_curves(**c6: tuple[float, float, float]) -> dict[tuple[str, int], Any]:
    """Each system's 6 tok/s violation rates at N = 60, 120, 180 (4 tok/s: none)."""
    return {
        (system, n): metrics({"c4": 0.0, "c6": rate})
        for system, rates in c6.items()
        for n, rate in zip((60, 120, 180), rates, strict=True)
    }


def test_a_knee_shift_within_one_grid_step_is_not_comparable() -> None:
    """The quick run judged "63.1 vs 63.3 ✗ miss" on the grid N = 60/120/180: both knees
    lie between 60 and 120, where their order is the interpolation's, not a run's. Not a
    miss, not a hold: not comparable (within resolution), with its cause."""
    # WISP: 60 + 0.05/0.25·60 = 72, left of FCFS's 60 + 0.05/0.2·60 = 75 (the old code's ✗)
    curves = _knee_curves(wisp=(0.0, 0.25, 0.9), fcfs=(0.0, 0.2, 0.9))
    _, knee6 = knee_rows(results(curves=curves))
    assert knee6.ours == "72.0 vs 75.0 (not comparable (within resolution))"
    assert (knee6.direction_ok, knee6.outcome) == (None, Outcome.WITHIN_RESOLUTION)
    assert knee6.verdict == (
        "not comparable: both knees lie between N = 60 and 120, one step of the grid: their "
        "order there is the straight line's, not a run's"
    )
    assert knee6.note == (
        "not comparable (within resolution): both knees lie between N = 60 and 120, one step "
        "of the grid: their order there is the straight line's, not a run's"
    )
    assert knee6.tolerance == "direction (a grid point between the knees)"
    # a grid point between them measures the order: WISP reaches 5% by 120, FCFS only after
    later = _knee_curves(wisp=(0.0, 0.25, 0.9), fcfs=(0.0, 0.0, 0.9))
    assert knee_rows(results(curves=later))[1].direction_ok is False
    # knees on either side of a grid point only touch there: measured
    touching = _knee_curves(wisp=(0.0, 0.05, 0.9), fcfs=(0.0, 0.0, 0.1))
    _, row = knee_rows(results(curves=touching))
    assert (row.ours, row.direction_ok) == ("120.0 vs 150.0", False)


def test_knees_off_the_grid_are_not_comparable_setting_not_reached() -> None:
    """Neither knee on the grid (both beyond its last N, or both at its first) was judged a
    miss; one beyond the range against one on it is measured (at the last N one reached ε
    and the other did not)."""
    beyond = knee_rows(results(curves=_knee_curves(wisp=(0.0, 0.0, 0.0), fcfs=(0.0, 0.0, 0.0))))
    assert beyond[1].ours == "beyond range vs beyond range"
    assert beyond[1].outcome is Outcome.UNREACHED and beyond[1].direction_ok is None
    assert beyond[1].unreached == "neither knee lies on the grid: both beyond N = 180"
    first = knee_rows(results(curves=_knee_curves(wisp=(0.1, 0.5, 0.9), fcfs=(0.2, 0.5, 0.9))))
    assert (first[1].ours, first[1].outcome) == ("60.0 vs 60.0", Outcome.UNREACHED)
    assert first[1].unreached == "neither knee lies on the grid: both at N = 60"
    one = knee_rows(results(curves=_knee_curves(wisp=(0.0, 0.0, 0.0), fcfs=(0.0, 0.0, 0.1))))
    assert (one[1].ours, one[1].direction_ok) == ("beyond range vs 150.0", True)


def test_the_sensitivity_at_an_unreached_operating_point_is_not_comparable() -> None:
    """The quick run's *Sensitivities* said the work-conserving W4 comparison at N = 147
    "would be ✗" where the judged row there is not comparable (setting not reached)."""
    fcfs = {"c2": 0.0, "c4": 0.237, "c6": 0.9, "c8": 1.0}
    worse = {"c2": 0.0, "c4": 0.9, "c6": 1.0, "c8": 1.0}
    res = results(**_at(147, 0.237, fcfs=fcfs, wisp=worse, **{"wisp-wc": worse}))
    assert res.operating is not None and not res.operating.reached
    assert "at N = 147 would be not comparable (setting not reached), its knees'" in (
        reading_line(res)
    )
    _, printed, conserving, _ = operating_rows(res)
    assert printed.outcome is Outcome.UNREACHED
    assert conserving.note.endswith(
        "WISP ≤ ½ FCFS at 4 tok/s and below FCFS at 6 not comparable (setting not reached)"
    )
    # the knees' would-be verdicts follow the same rule as the judged rows
    curves = _knee_curves(
        fcfs=(0.0, 0.2, 0.9), wisp=(0.0, 0.0, 0.0), **{"wisp-wc": (0.0, 0.25, 0.9)}
    )
    line = reading_line(dataclasses.replace(res, curves=curves))
    assert (
        "knees' shift right at 4 / 6 tok/s not comparable (setting not reached) / not "
        "comparable (within resolution);" in line
    )


def _with_plateaus(base: StopStudy, ranges: dict[str, tuple[float, float]]) -> StopStudy:
    """``base`` with each predictor's held-out FPR range over its near-best cuts."""
    predictors = tuple(
        dataclasses.replace(p, plateau=ThresholdPlateau(3, 0.3, 0.5, 0.02, *ranges[p.name]))
        for p in base.predictors
    )
    return dataclasses.replace(base, predictors=predictors)


def test_w6_s_direction_within_the_threshold_rule_s_resolution_is_not_comparable() -> None:
    """The quick run judged W6's direction ✗ on MLP 0.106 against a tree's 0.100 while each
    FPR could lie anywhere over its near-best cuts, ranges that overlap: that order is the
    threshold rule's pick, not a measured difference."""
    points = {"mlp": (point(0.106, 0.8), point(0.4, 0.6))} | {
        t: (point(fpr, 0.7), point(0.8, 0.65))
        for t, fpr in zip(TREES, (0.1, 0.12, 0.13), strict=True)
    }
    overlapping = {"mlp": (0.06, 0.23), "lightgbm": (0.05, 0.22), "random_forest": (0.3, 0.4),
                   "xgboost": (0.3, 0.4)}  # fmt: skip
    row, _ = w6_rows(_with_plateaus(study(points), overlapping))
    assert row.direction_ok is None
    assert (
        row.ours == "0.91 (MLP 0.106 vs 0.100–0.130); FPR order not comparable (within resolution)"
    )
    assert row.note == (
        "BalAcc MLP 0.800, trees 0.700/0.700/0.700; not comparable (within resolution): the "
        "MLP's held-out FPR range over the cuts its threshold rule cannot tell apart overlaps "
        "lightgbm's, so their order is the rule's pick, not a measured difference (held-out FPR "
        "over the cuts within one SE of each best validation J: mlp 0.060–0.230, lightgbm "
        "0.050–0.220, random_forest 0.300–0.400, xgboost 0.300–0.400)"
    )
    assert row.outcome is Outcome.MISS  # the magnitude (0.91 against 0.51 ± 25%) still counts
    # MLP's range wholly above a tree's: a measured miss, whatever the ranges that overlap
    above = {**overlapping, "random_forest": (0.01, 0.05)}
    assert w6_rows(_with_plateaus(study(points), above))[0].direction_ok is False
    # wholly below every tree's: measured, and the BalAcc decides the rest
    below = {**overlapping, "mlp": (0.01, 0.04)}
    assert w6_rows(_with_plateaus(study(points), below))[0].direction_ok is True
