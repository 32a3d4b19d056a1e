"""``edgespec reproduce dsd``: run D2–D7, write the run folder, print the claims (D1
beside them, not judged) and, in a quick run, what it leaves out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgespec.output_paths import write_text_atomically


def reproduce(out: Path, *, quick: bool, workers: int, progress: bool, command: str) -> list[Any]:
    """Run D2–D7 in both cost modes, write the run folder (REPORT.md's *Sensitivities*
    after its files, where the plan runs the variant fleet; in a quick run, what it leaves
    out last), print the table (D1, not judged, then each claim's physical rows and its
    DSD-Sim compat rows) and what a quick run leaves out; returns the claim rows."""
    from edgespec.reproduce.command import PAPERS
    from edgespec.reproduce.dsd.choices import CHOICES, SENSITIVITIES
    from edgespec.reproduce.dsd.claims import CALIBRATION, all_rows
    from edgespec.reproduce.dsd.findings import findings
    from edgespec.reproduce.dsd.paper_errors import paper_errors, run_paper_errors
    from edgespec.reproduce.dsd.plots import plot_dsd
    from edgespec.reproduce.dsd.quick import left_out
    from edgespec.reproduce.dsd.runs import DsdPlan, results_dict, run_dsd
    from edgespec.reproduce.folder import incomplete_run_removed, results_text
    from edgespec.reproduce.printed import print_claims
    from edgespec.reproduce.report_file import sensitivities_markdown, write_report
    from edgespec.sweeps.executor import make_executor

    plan = DsdPlan.quick() if quick else DsdPlan.full()
    with incomplete_run_removed(out, PAPERS["dsd"].files):
        results, files = run_dsd(plan, make_executor(workers), out / "scenarios", progress)
        write_text_atomically(out / "results.json", results_text("dsd", results_dict(results)))
    by_mode = [all_rows(res) for res in results]  # after results.json: a failure keeps the runs
    rows = sorted([CALIBRATION, *(r for mode in by_mode for r in mode)], key=lambda r: r.claim_id)
    for res in results:
        files += plot_dsd(out, res)
    files.append("results.json")
    title = "DSD (seed 004) reproduced" + (" — quick" if quick else "")
    sensitivities = sensitivities_markdown([f"**{name}**: {what}" for name, what in SENSITIVITIES])
    omitted = left_out(plan)
    write_report(
        out / "REPORT.md", title, command, rows, CHOICES, files, quick=quick,
        findings=findings(results),
        paper_errors=(*paper_errors(), *run_paper_errors(results)),
        appendix=sensitivities if plan.variant_rtts_ms else "", left_out=omitted,
    )  # fmt: skip
    print_claims(rows, quick=quick, left_out=omitted)
    print(f"report: {out / 'REPORT.md'}")
    return rows
