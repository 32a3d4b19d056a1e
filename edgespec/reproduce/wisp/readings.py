"""W4's two readings of Algorithm 1: as printed (a batch stops at the first request that
does not fit; WISP, judged) and work-conserving (it skips that request; ``wisp-wc``, a
sensitivity). Which one Table 1 comes from the paper does not say, so the claim is judged
once, on the printed one; the work-conserving one's would-be verdicts are computed here for
its rows' notes, REPORT.md's *Sensitivities* (:func:`reading_line`) and the *Findings*
(:func:`w4_holds`)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from edgespec.reproduce.claims import mark
from edgespec.reproduce.wisp.operating import OPERATING_CLASS, knee
from edgespec.reproduce.wisp.resolution import WITHIN_RESOLUTION, Span, below
from edgespec.reproduce.wisp.runs import WispResults
from edgespec.reproduce.wisp.setup import CLASSES
from edgespec.sweeps.capacity import class_violation

READINGS = {
    "wisp": "Algorithm 1 as printed",
    "wisp-wc": "Algorithm 1 work-conserving",
}
"""The two readings of Algorithm 1 W4 compares with FCFS; the first is judged, the second
a sensitivity."""
JUDGED_READING = "wisp"
SENSITIVITY = "wisp-wc"
SENSITIVITY_NOTE = (
    "a sensitivity, not judged: the paper does not say which reading of Algorithm 1 Table 1 "
    "comes from, and W4 is judged once, on the printed one (WISP)"
)
KNEE_CLASSES = (OPERATING_CLASS, "c6")


def violations(res: WispResults, system: str) -> dict[str, float]:
    """``system``'s violation rate per class at W4's operating point."""
    return {c: class_violation(c)(res.at_operating[system]) for c in CLASSES}


def w4_holds(res: WispResults, system: str) -> bool | None:
    """W4's main verdict for one reading at the operating point (WISP ≤ ½ FCFS at 4 tok/s,
    below FCFS at 6); ``None`` where that reading or FCFS did not run there."""
    if res.operating is None or not {system, "fcfs"} <= set(res.at_operating):
        return None
    mine, fcfs = violations(res, system), violations(res, "fcfs")
    return mine["c4"] <= 0.5 * fcfs["c4"] and mine["c6"] < fcfs["c6"]


def knees_on_grid(res: WispResults, cls: str) -> dict[str, float | None]:
    """Each system's knee at ``cls`` (the first N with ε violations or more, interpolated
    on the grid; ``None``: beyond the range): WISP's and FCFS's always, the work-conserving
    reading's where it ran."""
    eps = res.plan.setup.epsilon
    return {
        s: knee(((n, class_violation(cls)(m)) for (t, n), m in res.curves.items() if t == s), eps)
        for s in (*READINGS, "fcfs")
        if s in ("wisp", "fcfs") or any(t == s for t, _ in res.curves)
    }


@dataclass(frozen=True, slots=True)
class KneeShift:
    """Whether one reading's knee lies right of FCFS's, as the grid measures it
    (:mod:`resolution`'s rule): ``ok`` is ``None`` where ``unreached`` (neither knee on the
    grid) or ``within`` (both in one grid step) says why."""

    ok: bool | None
    unreached: str = ""
    within: str = ""

    def verdict(self) -> str:
        """The would-be verdict as shown in a sensitivity's note."""
        if self.unreached:
            return "not comparable (setting not reached)"
        return WITHIN_RESOLUTION if self.within else mark(self.ok)


def knee_span(knee_n: float | None, grid: Sequence[int]) -> Span:
    """Where a knee interpolated on ``grid`` can lie: between the grid points around it,
    at or before the first (``knee_n`` there already), beyond the last (``None``)."""
    points = sorted(grid)
    if knee_n is None:
        return Span(points[-1], float("inf"))
    i = bisect.bisect_left(points, knee_n)
    return Span(float("-inf"), points[0]) if i == 0 else Span(points[i - 1], points[i])


def knee_shift(knees: dict[str, float | None], system: str, grid: Sequence[int]) -> KneeShift:
    """``system``'s knee right of FCFS's: measured only where a grid point lies between
    them (:func:`~edgespec.reproduce.wisp.resolution.below`); neither knee on the grid is
    not comparable (setting not reached), both in one grid step is within resolution."""
    f, w = knees["fcfs"], knees[system]
    span_f, span_w = knee_span(f, grid), knee_span(w, grid)
    first, last = min(grid), max(grid)
    if f is None and w is None:
        return KneeShift(None, unreached=f"neither knee lies on the grid: both beyond N = {last}")
    if span_f == span_w == Span(float("-inf"), first):
        return KneeShift(None, unreached=f"neither knee lies on the grid: both at N = {first}")
    ok = below(span_f, span_w)
    if ok is None:
        return KneeShift(
            None,
            within=f"both knees lie between N = {span_f.lo:g} and {span_f.hi:g}, one step of "
            "the grid: their order there is the straight line's, not a run's",
        )
    return KneeShift(ok)


def judged(
    system: str, ok: bool | None, claim: str, note: str, would: str = ""
) -> tuple[bool | None, str]:
    """(direction_ok, note) of a row of one reading: the printed one's verdict, or ``None``
    and the work-conserving one's would-be verdict on ``claim`` (``would``, or ``ok``'s
    mark) added to its note."""
    if system == JUDGED_READING:
        return ok, note
    said = f"{SENSITIVITY_NOTE}: {claim} {would or mark(ok)}"
    return None, "; ".join(filter(None, (note, said)))


def w4_would_be(res: WispResults, system: str) -> str:
    """``system``'s W4 comparison with FCFS as a would-be verdict: not comparable where the
    operating point is not reached (as the judged rows there are)."""
    if res.operating is not None and not res.operating.reached:
        return "not comparable (setting not reached)"
    return mark(w4_holds(res, system))


def reading_line(res: WispResults) -> str:
    """The work-conserving reading's would-be W4 verdicts, for REPORT.md's *Sensitivities*:
    each as the judged rows of the printed reading would be shown."""
    at = "" if res.operating is None else f" at N = {res.operating.devices}"
    grid = res.plan.curve_devices
    shifts = " / ".join(
        knee_shift(k, SENSITIVITY, grid).verdict() if SENSITIVITY in k else mark(None)
        for k in (knees_on_grid(res, c) for c in KNEE_CLASSES)
    )
    return (
        "**Algorithm 1's stop** (chosen: as printed, WISP stops a batch at the first request "
        "that does not fit; the paper does not say which reading Table 1 comes from): read "
        f"as work-conserving (`{SENSITIVITY}`: it skips that request and tries the next), "
        f"W4's comparison with FCFS (WISP ≤ ½ FCFS at 4 tok/s, below it at 6){at} would be "
        f"{w4_would_be(res, SENSITIVITY)}, its knees' shift right at "
        + " / ".join(f"{CLASSES[c]:g}" for c in KNEE_CLASSES)
        + f" tok/s {shifts}; the W4 rows of the work-conserving reading show its numbers."
    )
