"""The headline counts the paper's system only (the physical mode: DSD's §2 and Eqs. 1–2);
the DSD-Sim compat mode's rows are shown beside it and counted on a line of their own.
Before, every claim was judged in both modes and both were added to one headline (the full
run's ``103 rows: 27 hold, …``), so a claim had two chances to hold: D6's RR − JSQ gap held
in direction only in physical mode and held in compat mode, and both counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import edgespec.reproduce.dsd.plots as dsd_plots
import edgespec.reproduce.dsd.runs as dsd_runs
from edgespec.reproduce.claims import ClaimRow, headline
from edgespec.reproduce.dsd.causes import MODE_TAGS
from edgespec.reproduce.dsd.claims import CALIBRATION, all_rows
from edgespec.reproduce.dsd.modes import (
    NAMED_MODE,
    NAMED_MODE_HEADING,
    PAPER_MODE,
    headline_lines,
    named_mode_line,
    split_modes,
)
from edgespec.reproduce.dsd.report import reproduce as reproduce_dsd
from edgespec.reproduce.dsd.runs import DsdPlan, DsdResults, results_from_dict

FULL_DSD = Path(__file__).parents[3] / "benchmarks" / "results" / "reproduce-dsd-full.json"
FULL = results_from_dict(json.loads(FULL_DSD.read_text()), DsdPlan.full())


def _rows(mode: str) -> list[ClaimRow]:
    (res,) = [r for r in FULL if r.cost_mode == mode]
    return all_rows(res)


def test_the_modes_are_physical_for_the_paper_and_compat_named() -> None:
    assert (PAPER_MODE, NAMED_MODE) == ("physical", "dsdsim_compat")


def test_the_full_runs_headline_counts_the_physical_rows_only() -> None:
    physical, compat = _rows("physical"), _rows("dsdsim_compat")
    lines = headline_lines(FULL).splitlines()
    assert lines == [
        headline([CALIBRATION, *physical]),
        f"DSD-Sim compat mode (named, not in the headline): {headline(compat)}",
    ]
    assert lines[0].startswith(f"{len(physical) + 1} rows: ")
    both = headline([CALIBRATION, *physical, *compat])  # the old headline: two chances a claim
    assert both not in lines


def test_the_headline_does_not_move_with_the_named_modes_verdicts() -> None:
    """The compat mode's runs gone (every compat row a miss): the headline is the same, the
    named mode's own line is not."""
    (compat,) = [r for r in FULL if r.cost_mode == NAMED_MODE]
    emptied = [r if r.cost_mode == PAPER_MODE else DsdResults(compat.plan, {}) for r in FULL]
    before, after = headline_lines(FULL).splitlines(), headline_lines(emptied).splitlines()
    assert after[0] == before[0]
    assert after[1] != before[1]


def test_a_missing_mode_is_refused() -> None:
    with pytest.raises(ValueError) as refused:
        split_modes(CALIBRATION, {"physical": _rows("physical")})
    assert str(refused.value) == "DSD rows: no rows for cost mode(s) dsdsim_compat"


def test_report_and_console_headline_the_paper_mode_and_name_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The full run's results as if just run (no plots): REPORT.md's headline and claims
    table are the physical rows' (and D1's); the compat rows follow in their own section
    under their own count, before the chosen inputs and the files, as on the console."""
    monkeypatch.setattr(dsd_runs, "run_dsd", lambda *args: (FULL, []))
    monkeypatch.setattr(dsd_plots, "plot_dsd", lambda *args: [])
    rows = reproduce_dsd(tmp_path, quick=False, workers=1, progress=False, command="test")
    physical, compat = _rows("physical"), _rows("dsdsim_compat")
    paper = split_modes(CALIBRATION, {"physical": physical, "dsdsim_compat": compat})
    assert rows == [*paper.paper, *paper.named]
    report = (tmp_path / "REPORT.md").read_text()
    both = headline([CALIBRATION, *physical, *compat])
    assert report.split("\n")[4] == f"{headline(paper.paper)}."
    assert both not in report
    section = report.index(f"\n## {NAMED_MODE_HEADING}\n\n{named_mode_line(compat)}.\n")
    tag = f"[{MODE_TAGS['dsdsim_compat']}] "
    for row in physical:
        assert report.index(f"| {row.claim_id} | {row.what} |") < section
    for row in compat:
        assert row.what.startswith(tag)
        assert report.index(f"| {row.claim_id} | {row.what} |") > section
    assert tag not in report[:section]
    # the named mode follows the paper's findings and errors, before the chosen inputs and
    # the files (a reader of the claims meets it beside them, not after the file list)
    assert report.index("## Where the paper is wrong") < section
    assert section < report.index("## Inputs the paper does not state") < report.index("## Files")
    printed = " ".join(capsys.readouterr().out.split())  # the console wraps its lines
    assert both not in printed
    top = printed.index(headline(paper.paper))
    below = printed.index(f"{NAMED_MODE_HEADING}; its rows are not in the headline above")
    assert top < below < printed.index(headline(compat))
