"""Rows that are shown but never judged: a setting (a chosen input fixes the number) and a
row that holds by construction (no run could come out otherwise). Neither counts as a row
that holds, neither needs a cause, and the printed table shows neither with verdict marks,
only its outcome; every printed row shows its tolerance. A quick run's magnitude is not
compared either: printed as ``– (quick run)``, as REPORT.md's verdict shows it."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from edgespec.reproduce.claims import ClaimRow, Outcome, headline
from edgespec.reproduce.printed import print_claims
from edgespec.reproduce.report_file import write_report

FAILING = ClaimRow("D2", "absolute throughput", "25.1", "25.8", "±50%", None, False)
PASSING = replace(FAILING, magnitude_ok=True)


def _printed(rows: list[ClaimRow]) -> list[str]:
    console = Console(width=100, record=True, file=io.StringIO())
    print_claims(rows, console)
    return console.export_text().splitlines()


def _line_of(lines: list[str], claim_id: str) -> str:
    return next(line for line in lines if line.startswith(claim_id + " "))


def test_a_setting_is_shown_but_never_judged(tmp_path: Path) -> None:
    """A row whose number a chosen input fixes cannot pass or fail: whatever its verdicts,
    its outcome is a setting, it needs no cause, and the headline counts it apart."""
    for row in (FAILING, PASSING):
        shown = replace(row, setting="the arrival rate was chosen to give it")
        assert shown.outcome is Outcome.SETTING
        assert shown.why == "" and shown.cause is None
        assert shown.verdict == "setting: the arrival rate was chosen to give it"
    rows = [replace(FAILING, setting="the arrival rate"), replace(PASSING, what="other")]
    assert (
        headline(rows) == "2 rows: 1 hold, 0 hold in direction only, 0 miss, 1 setting, not a claim"
    )
    write_report(tmp_path / "R.md", "t", "cmd", rows, [], [])
    text = (tmp_path / "R.md").read_text()
    assert "| setting: the arrival rate | setting, not a claim |" in text
    assert "have no known cause" not in text


def test_a_row_that_cannot_fail_is_counted_apart_from_the_rows_that_hold(tmp_path: Path) -> None:
    """A verdict the model's construction decides is no evidence: whatever its verdicts,
    the row's outcome is 'by construction', it needs no cause, the headline counts it
    apart, and the report says why it could not come out otherwise."""
    why = "ADS latency reads no acceptance rate"
    for row in (FAILING, PASSING, replace(PASSING, direction_ok=True, magnitude_ok=None)):
        shown = replace(row, by_construction=why)
        assert shown.outcome is Outcome.BY_CONSTRUCTION
        assert shown.why == "" and shown.cause is None
        assert shown.verdict == f"by construction: {why}"
    rows = [replace(PASSING, claim_id="Z1", by_construction=why), PASSING]
    assert headline(rows) == (
        "2 rows: 1 hold, 0 hold in direction only, 0 miss, 1 by construction, not judged"
    )
    write_report(tmp_path / "R.md", "t", "cmd", rows, [], [])
    text = (tmp_path / "R.md").read_text()
    assert f"| by construction: {why} | by construction, not judged |" in text
    assert "holds by construction, shown and not judged" in text  # the outcomes explained


def test_unjudged_rows_are_printed_without_marks_and_every_row_with_its_tolerance() -> None:
    rows = [
        replace(PASSING, claim_id="Z4", setting="the rate"),
        replace(FAILING, claim_id="Z2", tolerance="direction", by_construction="no alpha"),
        replace(FAILING, claim_id="Z3", direction_ok=True, tolerance="±25%"),
    ]
    lines = _printed(rows)
    assert _line_of(lines, "claim").split() == [
        "claim", "what", "paper", "edgespec", "tolerance", "verdict"
    ]  # fmt: skip
    assert _line_of(lines, "Z4").split()[-2:] == ["±50%", "setting"]
    assert _line_of(lines, "Z2").split()[-3:] == ["direction", "by", "construction"]
    assert _line_of(lines, "Z3").split()[-5:] == ["±25%", "✓", "✗", "direction", "only"]


def test_the_printed_table_shows_a_quick_runs_magnitude_as_not_compared() -> None:
    """Before, a quick row printed ``✓ ✓ direction only`` (REPORT.md: ``magnitude ✓ (quick
    run)``): a magnitude shown as compared on a row the quick run does not compare."""
    short = "1 Monte-Carlo draw(s) instead of 20"
    lucky = replace(PASSING, claim_id="Z2", direction_ok=True, quick_run=short)
    rows = [lucky, replace(PASSING, claim_id="Z4", quick_run=short)]
    rows += [
        replace(lucky, claim_id="Z5", magnitude_ok=None),
        replace(lucky, claim_id="Z1", quick_run=""),
    ]
    verdicts = [_line_of(_printed(rows), r.claim_id).split("±50%")[1].strip() for r in rows]
    assert verdicts == [
        "✓ – (quick run) direction only",
        "– – (quick run) not comparable",
        "✓ – hold",  # no magnitude judged: nothing for the quick run to leave out
        "✓ ✓ hold",  # a full run's row compares its magnitude
    ]
