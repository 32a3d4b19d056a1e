"""The shared verdict helpers: ``within`` at its tolerance boundary, ``change``, ``pct``, a
row's ``holds``, ``verdict``, ``outcome`` and cause, the report's headline counts, table and
reasons, the quick-run marking, and the printed table at 80 columns (edgespec.reproduce.printed)."""

from __future__ import annotations

import io
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from edgespec.reproduce.claims import (
    UNKNOWN_CAUSE,
    Cause,
    ClaimRow,
    Finding,
    Outcome,
    Reason,
    change,
    headline,
    pct,
    within,
)
from edgespec.reproduce.printed import column_widths, print_claims
from edgespec.reproduce.report_file import markdown_table, write_report


@pytest.mark.parametrize(
    ("ours", "paper", "relative", "expected"),
    [
        (1.25, 1.0, 0.25, True),  # exactly at +25%: inside
        (0.75, 1.0, 0.25, True),  # exactly at −25%: inside
        (1.2500001, 1.0, 0.25, False),
        (0.7499999, 1.0, 0.25, False),
        (-5.0, -4.0, 0.25, True),  # a negative paper number (a cut): the band is |paper|-wide
        (-3.0, -4.0, 0.25, True),
        (-5.0001, -4.0, 0.25, False),
        (4.0, -4.0, 0.25, False),  # the right size, the wrong sign
        (0.0, 0.0, 0.25, True),
        (1e-9, 0.0, 0.25, False),
        (math.nan, 1.0, 0.25, False),
        (1.0, math.inf, 0.25, False),  # |1 − ∞| ≤ 0.25·∞ would say yes
        (math.inf, math.inf, 1.0, False),
        (-math.inf, 1.0, 1.0, False),
    ],
)
def test_within_at_and_beyond_the_tolerance(
    ours: float, paper: float, relative: float, expected: bool
) -> None:
    assert within(ours, paper, relative) is expected


def test_change_and_pct() -> None:
    assert change(3.0, 2.0) == 0.5
    assert change(1.0, 4.0) == -0.75
    assert change(0.0, 2.0) == -1.0
    assert change(None, 2.0) is None and change(2.0, None) is None
    assert change(1.0, 0.0) is None  # no relative change from nothing
    assert (pct(0.1234), pct(-0.05), pct(0.0), pct(None)) == ("+12.3%", "-5.0%", "+0.0%", "n/a")


def _row(
    direction: bool | None,
    magnitude: bool | None,
    note: str = "",
    reason: Reason | None = None,
    quick_run: str = "",
) -> ClaimRow:
    return ClaimRow("X1", "what", "1", "2", "±25%", direction, magnitude, note, reason, quick_run)


HOLD, DIRECTION_ONLY, MISS = Outcome.HOLDS, Outcome.DIRECTION_ONLY, Outcome.MISS


@pytest.mark.parametrize(
    ("direction", "magnitude", "holds", "verdict", "outcome"),
    [
        (True, True, True, "direction ✓, magnitude ✓", HOLD),
        (True, None, True, "direction ✓, magnitude –", HOLD),
        (None, True, True, "direction –, magnitude ✓", HOLD),
        (None, None, False, "direction –, magnitude –", Outcome.NOT_JUDGED),  # not a hit
        (False, True, False, "direction ✗, magnitude ✓", MISS),
        (True, False, False, "direction ✓, magnitude ✗", DIRECTION_ONLY),
        (None, False, False, "direction –, magnitude ✗", MISS),
        (False, False, False, "direction ✗, magnitude ✗", MISS),
    ],
)
def test_holds_verdict_and_outcome(
    direction: bool | None, magnitude: bool | None, holds: bool, verdict: str, outcome: Outcome
) -> None:
    row = _row(direction, magnitude)
    assert row.holds is holds
    assert row.verdict == verdict
    assert row.outcome is outcome


def test_markdown_table_keeps_cells_apart() -> None:
    table = markdown_table([_row(True, None, note="a | b")])
    assert table.splitlines() == [
        "| claim | what | paper | edgespec | tolerance | verdict | outcome | cause | note |",
        "|---|---|---|---|---|---|---|---|---|",
        "| X1 | what | 1 | 2 | ±25% | direction ✓, magnitude – | hold |  | a / b |",
    ]


def test_report_counts_the_rows_that_hold(tmp_path: Path) -> None:
    rows = [_row(True, True), _row(None, None), _row(False, None), _row(None, True)]
    path = tmp_path / "REPORT.md"
    write_report(path, "T", "cmd", rows, [("seed", "fixed")], ["x.yaml"])
    text = path.read_text()
    assert "4 rows: 2 hold, 0 hold in direction only, 1 miss, 1 not judged." in text
    assert "- **seed**: fixed" in text and "- `x.yaml`" in text
    assert "## Findings" not in text  # none given: no section


def test_findings_come_after_the_claims_and_before_the_inputs(tmp_path: Path) -> None:
    path = tmp_path / "REPORT.md"
    found = Finding("Z3 (Fig. 8)", Cause.INCONSISTENT, "the constants give 9%.", "the Z3 rows")
    write_report(path, "T", "cmd", [_row(True, True)], [("seed", "fixed")], [], findings=[found])
    text = path.read_text()
    line = (
        "- **Z3 (Fig. 8)** (the paper is inconsistent with itself): the constants give 9%. "
        "Shown by: the Z3 rows."
    )
    assert line in text
    assert text.index("| claim |") < text.index("## Findings") < text.index(line)
    assert text.index(line) < text.index("## Inputs the paper does not state")


def test_headline_counts_hold_direction_only_and_miss() -> None:
    """Today's reader saw "23 rows; 5 hold" beside 18 rows with a ✗: the headline now says
    how the 18 split."""
    rows = (
        [_row(True, True)] * 3
        + [_row(True, None), _row(None, True)]
        + [_row(True, False)] * 9
        + [_row(False, None)] * 4
        + [_row(False, True), _row(False, False)]
        + [_row(None, False)] * 3
    )
    assert len(rows) == 23
    assert headline(rows) == "23 rows: 5 hold, 9 hold in direction only, 9 miss"
    assert headline(rows[:1]) == "1 row: 1 hold, 0 hold in direction only, 0 miss"
    assert headline([*rows, _row(None, None)]).endswith("9 miss, 1 not judged")


SLED = Reason(Cause.INCONSISTENT, "SLED recomputes its prefix every round")


def test_every_row_that_does_not_hold_carries_its_reason_into_the_report(tmp_path: Path) -> None:
    rows = [
        _row(False, None, reason=SLED),
        _row(True, False, reason=Reason(Cause.MISSING_INPUT, "the arrival rate: unsaturated")),
        _row(True, True, reason=Reason(Cause.MODELLING, "never shown: the row holds")),
    ]
    assert [r.cause for r in rows] == [Cause.INCONSISTENT, Cause.MISSING_INPUT, None]
    assert (
        rows[0].why
        == "the paper is inconsistent with itself — SLED recomputes its prefix every round"
    )
    path = tmp_path / "REPORT.md"
    write_report(path, "T", "cmd", rows, [], [])
    text = path.read_text()
    lines = text.splitlines()
    miss = next(line for line in lines if "| miss |" in line)
    assert (
        "| the paper is inconsistent with itself — SLED recomputes its prefix every round |" in miss
    )
    only = next(line for line in lines if "| hold in direction only |" in line)
    assert "an input the paper does not give — the arrival rate: unsaturated" in only
    assert "never shown" not in text
    assert "no known cause" not in text


def test_a_miss_without_a_stated_cause_says_cause_not_known(tmp_path: Path) -> None:
    rows = [_row(None, False), _row(True, False), _row(True, True)]
    assert [r.why for r in rows] == [UNKNOWN_CAUSE, UNKNOWN_CAUSE, ""]
    assert [r.cause for r in rows] == [None, None, None]
    path = tmp_path / "REPORT.md"
    write_report(path, "T", "cmd", rows, [], [])
    text = path.read_text()
    assert "| miss | cause not known |" in text
    assert "| hold in direction only | cause not known |" in text
    assert "2 of the rows that do not hold have no known cause." in text


def test_quick_run_magnitudes_are_marked_and_not_compared(tmp_path: Path) -> None:
    short = "12 s runs (full: 120 s)"
    # a magnitude off in a quick run: the direction still holds, the magnitude is the run's
    only = _row(True, False, reason=SLED, quick_run=short)
    assert only.holds is False and only.outcome is DIRECTION_ONLY
    assert only.verdict == "direction ✓, magnitude – (quick run)"  # not compared: no ✗
    assert only.cause is Cause.QUICK_RUN
    assert only.why == f"magnitude depends on run length (quick run) — {short}"
    # one within tolerance by luck is not a hold either, and holds keeps its meaning
    lucky = _row(True, True, quick_run=short)
    assert lucky.holds is True and lucky.outcome is DIRECTION_ONLY
    assert lucky.verdict == "direction ✓, magnitude – (quick run)"  # not compared: no ✓
    # no direction judged: not comparable at all
    absolute = _row(None, False, quick_run=short)
    assert absolute.outcome is Outcome.QUICK and absolute.cause is Cause.QUICK_RUN
    # a wrong direction stays a miss with its own cause; the magnitude is still the run's
    wrong = _row(False, False, reason=SLED, quick_run=short)
    assert wrong.outcome is MISS and wrong.cause is Cause.INCONSISTENT
    assert wrong.why == f"{SLED}; magnitude not compared (quick run)"
    # a row whose magnitude is not judged is not touched by the quick run
    direction = _row(True, None, quick_run=short)
    assert direction.outcome is HOLD and direction.verdict == "direction ✓, magnitude –"
    rows = [only, lucky, absolute, wrong, direction]
    assert headline(rows) == (
        "5 rows: 1 hold, 2 hold in direction only, 1 miss, 1 not comparable (quick run)"
    )
    path = tmp_path / "REPORT.md"
    write_report(path, "T — quick", "cmd --quick", rows, [], [], quick=True, left_out=[short])
    text = path.read_text()
    assert "**Quick run** (`--quick`)" in text
    assert "| direction –, magnitude – (quick run) | not comparable (quick run) |" in text
    assert "| direction ✓, magnitude – (quick run) | hold in direction only |" in text
    assert "✓ (quick run)" not in text and "✗ (quick run)" not in text
    write_report(path, "T", "cmd", [replace(r, quick_run="") for r in rows], [], [])
    assert "Quick run" not in path.read_text()


LONG = [
    ("W1", "capacity supercalifragilistic at 2 tok/s: WISP/centralized/SLED-ratios",
     "164 / 97 / 83 (1.69×, 1.98×) antidisestablishment",
     "244 / 153 / 35 (1.59×, 6.97×) floccinaucinihilipilification", True, False),
    ("D2-long", "throughput gain Default → S4 incomprehensibilities (GSM8K)",
     "25.1 → 28.1 req/s (+12.0%)", "9.33 → 10.00 → 8.83 → 9.50 → 14.83 (+58.9%)", False, False),
    ("W6-T1", "Theorem 1: FP(r) ≤ FP'(r) ∀r ⇒ E[W] ≤ E[W'] (held-out replay)",
     "holds (proof)", "334 of 334 dominating pairs", True, None),
]  # fmt: skip


def _printed(rows: list[ClaimRow], width: int = 80, quick: bool = False) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO())
    print_claims(rows, console, quick=quick)
    return console.export_text().splitlines()


def _split_words(rows: list[ClaimRow], lines: list[str]) -> list[str]:
    """The words of the rows' cells and reasons that no printed line holds whole."""
    text = [r.claim_id for r in rows] + [r.what for r in rows] + [r.paper for r in rows]
    text += [r.ours for r in rows] + [r.why for r in rows]
    words = {w for t in text for w in t.split()}
    return sorted(w for w in words if not any(re.search(rf"(^|\s){re.escape(w)}(\s|$)", line)
                                              for line in lines))  # fmt: skip


def test_printed_table_fits_80_columns_and_keeps_words_whole() -> None:
    reason = Reason(
        Cause.MISSING_INPUT, "the arrival rate: electroencephalographically unsaturated"
    )
    rows = [ClaimRow(c, w, p, o, "±25%", d, m, reason=reason) for c, w, p, o, d, m in LONG]
    lines = _printed(rows)
    assert max(len(line) for line in lines) <= 80
    assert _split_words(rows, lines) == []
    text = "\n".join(lines)
    for word in (
        "floccinaucinihilipilification",
        "antidisestablishment",
        "WISP/centralized/SLED-ratios",
    ):
        assert word in text
    # every verdict and every reason is there, the reason on a line of its own under its row
    assert "✓ ✗ direction" in text and "✗ ✗ miss" in text and "✓ – hold" in text
    assert (
        sum("↳ an input the paper does not give — the arrival rate:" in line for line in lines) == 2
    )
    assert lines[:2] == [
        "claims: paper vs edgespec",
        "3 rows: 1 hold, 1 hold in direction only, 1 miss",
    ]


def test_printed_table_stacks_its_cells_when_the_words_cannot_sit_side_by_side() -> None:
    word = "x" * 20
    rows = [ClaimRow(word[:9], word, word, word, "±25%", True, False)]
    assert column_widths([("claim", "what", "paper", "edgespec", "verdict"), ("a",) * 5], 80) == [
        5, 4, 5, 8, 7
    ]  # fmt: skip
    assert column_widths([(word,) * 5], 80) is None  # 5 × 20 + 4 gaps of 2 > 80
    lines = _printed(rows, quick=True)
    assert max(len(line) for line in lines) <= 80
    assert _split_words(rows, lines) == []
    assert "quick run" in lines[0] and "edgespec: " + word in "\n".join(lines)
