"""``edgespec reproduce zhu``: run Z1–Z5, write the run folder, print the claims and, in a
quick run, what it leaves out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgespec.output_paths import write_text_atomically


def reproduce(out: Path, *, quick: bool, workers: int, progress: bool, command: str) -> list[Any]:
    """Run the draws, write REPORT.md (with the paper's known errors, the printed recursion
    run on one draw) and results.json, print the table (and what a quick run leaves out);
    returns the rows. A run stopped before results.json leaves nothing in ``out``."""
    from edgespec.reproduce.command import PAPERS
    from edgespec.reproduce.folder import incomplete_run_removed, results_text
    from edgespec.reproduce.jobs import run_all
    from edgespec.reproduce.printed import print_claims
    from edgespec.reproduce.report_file import write_report
    from edgespec.reproduce.zhu.causes import findings
    from edgespec.reproduce.zhu.claims import all_rows
    from edgespec.reproduce.zhu.coverage import left_out
    from edgespec.reproduce.zhu.events import events_summary
    from edgespec.reproduce.zhu.exhaustive import gap_summary
    from edgespec.reproduce.zhu.paper_errors import paper_errors, run_recursions
    from edgespec.reproduce.zhu.runs import ZhuPlan
    from edgespec.reproduce.zhu.setup import CHOICES, ZhuSetup
    from edgespec.sweeps.executor import make_executor
    from edgespec.sweeps.progress import progress_bar

    plan = ZhuPlan.quick() if quick else ZhuPlan.full()
    setup = ZhuSetup()
    jobs, outputs = _jobs(setup, plan)
    with incomplete_run_removed(out, PAPERS["zhu"].files), progress_bar(progress) as bar:
        task = bar.add_task("zhu draws", total=len(jobs))
        results = run_all(make_executor(workers), jobs, lambda: bar.advance(task))
        draws, rest = results[: plan.draws], results[plan.draws :]
        n = plan.exhaustive_draws
        gaps = {o: rest[i * n : (i + 1) * n] for i, o in enumerate(outputs)}
        events = rest[len(outputs) * n :]
        results_json = {"setup": setup.to_dict(), "draws": draws, "events": events}
        results_json["dp_gaps"] = {str(o): g for o, g in gaps.items()}
        write_text_atomically(out / "results.json", results_text("zhu", results_json))
    rows = all_rows(draws, setup, plan, quick)  # after results.json: a failure keeps the runs
    summary = gap_summary(gaps, plan.exhaustive_users) + events_summary(events)
    omitted = left_out(setup, plan)
    errors = paper_errors(setup, run_recursions(setup))
    title = "Zhu et al. (seed 001) reproduced" + (" — quick" if quick else "")
    write_report(
        out / "REPORT.md",
        title,
        command,
        rows,
        CHOICES,
        ["results.json"],
        quick=quick,
        findings=findings(setup, draws),
        paper_errors=errors,
        appendix="\n" + "\n".join(summary) + "\n",
        left_out=omitted,
    )
    print_claims(rows, quick=quick, left_out=omitted)
    print(f"report: {out / 'REPORT.md'}")
    return rows


def _jobs(setup: Any, plan: Any) -> tuple[list[Any], tuple[int, ...]]:
    """The run's jobs, in the order the results are read back: the draws, the exhaustive
    search's draws at each output length (returned), the event draws."""
    from edgespec.reproduce.zhu.events import AcceptanceJob
    from edgespec.reproduce.zhu.exhaustive import SHORT_OUTPUT, GapJob
    from edgespec.reproduce.zhu.runs import DrawJob

    jobs: list[Any] = [DrawJob(setup, plan, d) for d in range(plan.draws)]
    outputs = (setup.max_output_len, SHORT_OUTPUT)
    jobs += [
        GapJob(setup, plan.exhaustive_users, out, d)
        for out in outputs
        for d in range(plan.exhaustive_draws)
    ]
    jobs += [AcceptanceJob(setup, d) for d in range(plan.event_draws)]
    return jobs, outputs
