"""The shared verdict helpers: ``within`` at its tolerance boundary, ``change``, ``pct``, a
row's ``holds`` and ``verdict``, and the report's table and count of rows that hold."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from edgespec.reproduce.claims import ClaimRow, change, markdown_table, pct, within, write_report


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


def _row(direction: bool | None, magnitude: bool | None, note: str = "") -> ClaimRow:
    return ClaimRow("X1", "what", "1", "2", "±25%", direction, magnitude, note)


@pytest.mark.parametrize(
    ("direction", "magnitude", "holds", "verdict"),
    [
        (True, True, True, "direction ✓, magnitude ✓"),
        (True, None, True, "direction ✓, magnitude –"),
        (None, True, True, "direction –, magnitude ✓"),
        (None, None, False, "direction –, magnitude –"),  # nothing judged: not a hit
        (False, True, False, "direction ✗, magnitude ✓"),
        (True, False, False, "direction ✓, magnitude ✗"),
        (None, False, False, "direction –, magnitude ✗"),
    ],
)
def test_holds_and_verdict(
    direction: bool | None, magnitude: bool | None, holds: bool, verdict: str
) -> None:
    row = _row(direction, magnitude)
    assert row.holds is holds
    assert row.verdict == verdict


def test_markdown_table_keeps_cells_apart() -> None:
    table = markdown_table([_row(True, None, note="a | b")])
    assert table.splitlines() == [
        "| claim | what | paper | edgespec | tolerance | verdict | note |",
        "|---|---|---|---|---|---|---|",
        "| X1 | what | 1 | 2 | ±25% | direction ✓, magnitude – | a / b |",
    ]


def test_report_counts_the_rows_that_hold(tmp_path: Path) -> None:
    rows = [_row(True, True), _row(None, None), _row(False, None), _row(None, True)]
    path = tmp_path / "REPORT.md"
    write_report(path, "T", "cmd", rows, [("seed", "fixed")], ["x.yaml"])
    text = path.read_text()
    assert "4 rows; 2 hold: no verdict failed" in text
    assert "- **seed**: fixed" in text and "- `x.yaml`" in text
