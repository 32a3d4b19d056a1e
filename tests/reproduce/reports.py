"""What every quick reproduction's REPORT.md must say, whatever the paper."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from edgespec.reproduce.claims import UNJUDGED, ClaimRow, Outcome, headline
from edgespec.reproduce.report_file import left_out_markdown


def check_quick_report(out: Path, rows: Sequence[ClaimRow], *, expect_miss: bool = True) -> str:
    """The report says it is a quick run and gives the headline counts (with a miss among
    them unless ``expect_miss`` is false); every row that does not hold (a setting or a
    row that holds by construction aside, never judged) has a known cause
    (never "cause not known"), shown beside its outcome. Returns the report's text for the
    paper's own checks."""
    report = (out / "REPORT.md").read_text()
    assert "**Quick run** (`--quick`)" in report
    assert f"{headline(rows)}." in report
    if expect_miss:
        assert Outcome.MISS in {r.outcome for r in rows}
    for row in rows:
        if row.outcome not in (Outcome.HOLDS, Outcome.NOT_JUDGED, *UNJUDGED):  # nothing failed
            assert row.cause is not None, row
            assert f"| {row.outcome.value} | {row.why} |" in report
    assert "| cause not known" not in report  # no cause cell says it
    for row in rows:  # a magnitude the quick run does not compare shows no ✓ or ✗
        if row.quick_magnitude and row.outcome not in UNJUDGED:
            assert row.verdict.endswith("magnitude – (quick run)"), row
    assert "✓ (quick run)" not in report and "✗ (quick run)" not in report
    return report


def check_declared_files(out: Path, name: str) -> None:
    """Every file the run wrote is one that reproduction ``name`` declares (what
    ``--overwrite`` removes), and results.json names it."""
    from edgespec.reproduce.command import PAPERS
    from edgespec.reproduce.folder import recorded

    declared = {path for pattern in PAPERS[name].files for path in out.glob(pattern)}
    assert {path for path in out.rglob("*") if path.is_file()} <= declared
    assert recorded(out, list(PAPERS)) == [name]


def check_left_out_last(report: str, items: Sequence[str]) -> None:
    """A quick REPORT.md ends with what the run leaves out: ``items``, each on a line, under
    *What the quick run leaves out*."""
    assert items
    assert report.endswith("\n\n## What the quick run leaves out\n\n" + "".join(
        f"- {item}\n" for item in items))  # fmt: skip
    assert report.endswith("\n".join(left_out_markdown(items)))


def one_cut_plans(full: Any, quick: Any, name: str = "") -> list[tuple[str, Any]]:
    """For every field where ``quick`` differs from ``full`` (a nested plan's or setup's
    field by its dotted name), ``full`` with that one value of ``quick``'s in place; none
    where the plan refuses that value alone (a :class:`ValueError`)."""
    cuts = []
    for f in fields(full):
        mine, theirs = getattr(full, f.name), getattr(quick, f.name)
        if mine == theirs:
            continue
        if is_dataclass(mine):
            for sub, plan in one_cut_plans(mine, theirs, f"{name}{f.name}."):
                cuts.append((sub, replace(full, **{f.name: plan})))
            continue
        try:
            cuts.append((f"{name}{f.name}", replace(full, **{f.name: theirs})))
        except ValueError:
            continue
    return cuts
