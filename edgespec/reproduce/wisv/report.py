"""``edgespec reproduce wisv``: run V1–V4 and Fig. 5's ablation, write the run folder,
print the claims and, in a quick run, what it leaves out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgespec.output_paths import write_text_atomically


def reproduce(out: Path, *, quick: bool, workers: int, progress: bool, command: str) -> list[Any]:
    """Run the cells, write REPORT.md and results.json, print the table (and what a quick
    run leaves out); returns the rows. A run stopped before results.json leaves nothing
    in ``out``.
    Stops with a :class:`~edgespec.errors.UserInputError` naming `edgespec train wisv`
    when the decision head's reject-share table is missing."""
    from edgespec.reproduce.claims import headline
    from edgespec.reproduce.command import PAPERS
    from edgespec.reproduce.folder import incomplete_run_removed, results_text
    from edgespec.reproduce.printed import print_claims
    from edgespec.reproduce.report_file import write_report
    from edgespec.reproduce.wisv.calibrated import (
        calibrated_markdown,
        calibrated_rows,
        calibrated_shares,
    )
    from edgespec.reproduce.wisv.claims import all_rows
    from edgespec.reproduce.wisv.runs import Tables, WisvPlan, left_out, results_dict, run_wisv
    from edgespec.reproduce.wisv.setup import CHOICES
    from edgespec.sweeps.executor import make_executor

    tables = Tables.find()  # before anything is written
    plan = WisvPlan.quick_plan() if quick else WisvPlan.full()
    with incomplete_run_removed(out, PAPERS["wisv"].files):  # a stopped run leaves nothing
        executor = make_executor(workers)
        calibrated = calibrated_shares(plan.setup)
        results, files = run_wisv(plan, executor, out / "scenarios", progress, tables,
                                  calibrated)  # fmt: skip
        write_text_atomically(out / "results.json", results_text("wisv", results_dict(results)))
    files.append("results.json")
    rows = all_rows(results)  # after results.json: a failure keeps the runs
    title = "WISV (seed 003) reproduced" + (" — quick" if quick else "")
    shares = "\n" + "\n".join(shares_section(results.shares, tables)) + "\n"
    omitted = left_out(plan)
    named = calibrated_rows(results)
    write_report(out / "REPORT.md", title, command, rows, CHOICES, files, quick=quick,
                 named_modes=calibrated_markdown(named), appendix=shares,
                 left_out=omitted)  # fmt: skip
    print_claims(rows, quick=quick, left_out=omitted)
    print(f"calibrated head (named mode, not in the headline): {headline(named)}")
    print(f"report: {out / 'REPORT.md'}")
    return rows


def shares_section(shares: dict[str, dict[str, float]], tables: Any) -> list[str]:
    """REPORT.md's note on the reject shares the WISV runs used."""
    lines = [
        "## The decision head's reject shares at T = 12",
        "",
        f"From `{tables.main}`"
        + (f" and `{tables.ablation}`" if tables.ablation is not None else "")
        + ": the share of greedy mismatches the head rejects, read at each link's channel "
        "quality κ (edgespec/policies/semantic/csi.py).",
        "",
        "| table | " + " | ".join(next(iter(shares.values()))) + " |",
        "|---|" + "---|" * len(next(iter(shares.values()))),
    ]
    for name, by_link in shares.items():
        lines.append(f"| {name} | " + " | ".join(f"{v:.3f}" for v in by_link.values()) + " |")
    return lines
