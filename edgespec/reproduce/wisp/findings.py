"""REPORT.md's *Findings* for WISP: where the paper is inconsistent with itself, each with
the paper's statements that conflict and the rows that show it."""

from __future__ import annotations

from edgespec.reproduce.claims import Cause, Finding
from edgespec.reproduce.wisp.claims import quick_run, sled_reason
from edgespec.reproduce.wisp.readings import JUDGED_READING, SENSITIVITY, w4_holds
from edgespec.reproduce.wisp.runs import WispResults


def _w4_reading(res: WispResults) -> Finding | None:
    """Where Algorithm 1 as printed misses W4 and its work-conserving reading (a
    sensitivity, never judged) would hold, Table 1 comes from an algorithm the paper does
    not print."""
    printed, conserving = w4_holds(res, JUDGED_READING), w4_holds(res, SENSITIVITY)
    if printed is None or conserving is None or printed or not conserving:
        return None
    return Finding(
        "W4 (Table 1)",
        Cause.INCONSISTENT,
        "Algorithm 1 as printed stops at the first request that does not fit and misses "
        "Table 1's ordering; read as work-conserving it holds: Table 1 comes from an "
        "algorithm the paper does not print.",
        "the W4 rows of both readings (the work-conserving one's verdict in its note)",
    )


def findings(res: WispResults) -> tuple[Finding, ...]:
    """Every finding this run shows (W4's only where the readings part ways, and never in a
    quick run: whether they do is its verdicts'; the WISP/SLED one rests on the run's
    ratios, which a quick REPORT.md leaves to the full run). The misses that rest on our
    stand-ins are not findings: Table 12 pricing centralized decoding (a modelling
    difference), i.i.d. acceptance with Table 10's point at every position (in place of the
    drafts and predictor behaviour the paper does not give)."""
    sled = sled_reason(res.plan.setup)
    found = Finding(
        "W1/W3 (Tables 2–3, WISP/SLED)", sled.cause, sled.line + ".",
        "the W1 and W3 rows' WISP/SLED ratios", "the W1 and W3 rows' WISP/SLED ratios",
    )  # fmt: skip
    reading = None if quick_run(res.plan) else _w4_reading(res)
    return (found, *([reading] if reading else []))
