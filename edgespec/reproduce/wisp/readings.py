"""W4's two readings of Algorithm 1: as printed (a batch stops at the first request that
does not fit; WISP, judged) and work-conserving (it skips that request; ``wisp-wc``, a
sensitivity). Which one Table 1 comes from the paper does not say, so the claim is judged
once, on the printed one; the work-conserving one's would-be verdicts are computed here for
its rows' notes, REPORT.md's *Sensitivities* (:func:`reading_line`) and the *Findings*
(:func:`w4_holds`)."""

from __future__ import annotations

from edgespec.reproduce.claims import mark
from edgespec.reproduce.wisp.operating import OPERATING_CLASS, knee
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


def shifts_right(knees: dict[str, float | None], system: str) -> bool:
    """``system``'s knee lies right of FCFS's (or beyond the range where FCFS's is not)."""
    f, w = knees["fcfs"], knees[system]
    return f is not None and (w is None or w > f)


def judged(system: str, ok: bool | None, claim: str, note: str) -> tuple[bool | None, str]:
    """(direction_ok, note) of a row of one reading: the printed one's verdict, or ``None``
    and the work-conserving one's would-be verdict on ``claim`` added to its note."""
    if system == JUDGED_READING:
        return ok, note
    return None, "; ".join(filter(None, (note, f"{SENSITIVITY_NOTE}: {claim} {mark(ok)}")))


def reading_line(res: WispResults) -> str:
    """The work-conserving reading's would-be W4 verdicts, for REPORT.md's *Sensitivities*."""
    main = w4_holds(res, SENSITIVITY)
    at = "" if res.operating is None else f" at N = {res.operating.devices}"
    grid = [knees_on_grid(res, c) for c in KNEE_CLASSES]
    shifts = " / ".join(mark(shifts_right(k, SENSITIVITY) if SENSITIVITY in k else None)
                        for k in grid)  # fmt: skip
    return (
        "**Algorithm 1's stop** (chosen: as printed, WISP stops a batch at the first request "
        "that does not fit; the paper does not say which reading Table 1 comes from): read "
        f"as work-conserving (`{SENSITIVITY}`: it skips that request and tries the next), "
        f"W4's comparison with FCFS (WISP ≤ ½ FCFS at 4 tok/s, below it at 6){at} would be "
        f"{mark(main)}, its knees' shift right at "
        + " / ".join(f"{CLASSES[c]:g}" for c in KNEE_CLASSES)
        + f" tok/s {shifts}; the W4 rows of the work-conserving reading show its numbers."
    )
