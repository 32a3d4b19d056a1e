"""REPORT.md's *Findings* for WISP: where the paper is inconsistent with itself, each with
the paper's statements that conflict and the rows that show it."""

from __future__ import annotations

from collections.abc import Sequence

from edgespec.reproduce.claims import Cause, ClaimRow, Finding
from edgespec.reproduce.wisp.claims import sled_reason
from edgespec.reproduce.wisp.runs import WispResults


def _w4_reading(rows: Sequence[ClaimRow]) -> Finding | None:
    """Where Algorithm 1 as printed misses W4 and its work-conserving reading holds, Table 1
    comes from an algorithm the paper does not print."""
    main = [r for r in rows if r.claim_id == "W4" and "vs FCFS; WISP ≤ ½ FCFS" in r.what]
    printed = next((r for r in main if "as printed" in r.what), None)
    conserving = next((r for r in main if "work-conserving" in r.what), None)
    if printed is None or conserving is None:
        return None
    if printed.direction_ok or not conserving.direction_ok:
        return None
    return Finding(
        "W4 (Table 1)",
        Cause.INCONSISTENT,
        "Algorithm 1 as printed stops at the first request that does not fit and misses "
        "Table 1's ordering; read as work-conserving it holds: Table 1 comes from an "
        "algorithm the paper does not print.",
        "the W4 rows of both readings",
    )


def findings(res: WispResults, rows: Sequence[ClaimRow]) -> tuple[Finding, ...]:
    """Every finding this run shows (W4's only where the readings part ways). The misses
    that rest on our stand-ins (Table 12 pricing centralized decoding, i.i.d. acceptance
    with Table 10's point per position) are modelling differences, not findings."""
    sled = sled_reason(res.plan.setup)
    found = Finding(
        "W1/W3 (Tables 2–3, WISP/SLED)", sled.cause, sled.line + ".",
        "the W1 and W3 rows' WISP/SLED ratios",
    )  # fmt: skip
    reading = _w4_reading(rows)
    return (found, *([reading] if reading else []))
