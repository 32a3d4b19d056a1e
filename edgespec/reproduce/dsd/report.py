"""``edgespec reproduce dsd``: run D2–D7, write the run folder, print the claims (D1
beside them, not judged; the headline counts the paper's system, the physical mode, and the
DSD-Sim compat mode's rows follow, counted on a line of their own: :mod:`.modes`) and, in a
quick run, what it leaves out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgespec.output_paths import write_text_atomically


def reproduce(out: Path, *, quick: bool, workers: int, progress: bool, command: str) -> list[Any]:
    """Run D2–D7 in both cost modes, write the run folder (REPORT.md's headline and claims
    table the paper's system's, D1 and the physical rows; after its findings and the paper's
    errors the DSD-Sim compat mode's section, its count on a line of its own; after the
    files *Sensitivities*, where the plan runs the variant fleet; in a quick run, what it
    leaves out last), print both tables the same
    way and what a quick run leaves out; returns the headline's rows, then the named mode's."""
    from edgespec.reproduce.command import PAPERS
    from edgespec.reproduce.dsd.choices import CHOICES, SENSITIVITIES
    from edgespec.reproduce.dsd.claims import CALIBRATION, all_rows
    from edgespec.reproduce.dsd.findings import findings
    from edgespec.reproduce.dsd.modes import named_mode_markdown, print_named_mode, split_modes
    from edgespec.reproduce.dsd.paper_errors import paper_errors, run_paper_errors
    from edgespec.reproduce.dsd.plots import plot_dsd
    from edgespec.reproduce.dsd.quick import left_out
    from edgespec.reproduce.dsd.runs import DsdPlan, results_dict, run_dsd
    from edgespec.reproduce.folder import incomplete_run_removed, results_text
    from edgespec.reproduce.printed import print_claims, print_left_out
    from edgespec.reproduce.report_file import sensitivities_markdown, write_report
    from edgespec.sweeps.executor import make_executor

    plan = DsdPlan.quick() if quick else DsdPlan.full()
    with incomplete_run_removed(out, PAPERS["dsd"].files):
        results, files = run_dsd(plan, make_executor(workers), out / "scenarios", progress)
        write_text_atomically(out / "results.json", results_text("dsd", results_dict(results)))
    # after results.json: a failure keeps the runs
    rows = split_modes(CALIBRATION, {res.cost_mode: all_rows(res) for res in results})
    for res in results:
        files += plot_dsd(out, res)
    files.append("results.json")
    title = "DSD (seed 004) reproduced" + (" — quick" if quick else "")
    sensitivities = sensitivities_markdown([f"**{name}**: {what}" for name, what in SENSITIVITIES])
    omitted = left_out(plan)
    write_report(
        out / "REPORT.md", title, command, rows.paper, CHOICES, files, quick=quick,
        findings=findings(results),
        paper_errors=(*paper_errors(), *run_paper_errors(results)),
        named_modes=named_mode_markdown(rows.named),
        appendix=sensitivities if plan.variant_rtts_ms else "",
        left_out=omitted,
    )  # fmt: skip
    print_claims(rows.paper, quick=quick)
    print_named_mode(rows.named, quick=quick)
    print_left_out(omitted)
    print(f"report: {out / 'REPORT.md'}")
    return [*rows.paper, *rows.named]
