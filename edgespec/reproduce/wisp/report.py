"""``edgespec reproduce wisp``: run W1–W10, write the run folder (REPORT.md with its
Findings, the sensitivities and, in a quick run, what it leaves out), print the claims.

The whole run, up to REPORT.md, is one unit: a run stopped anywhere before REPORT.md is
written (an error, Ctrl-C, SIGTERM) removes every file it wrote and the folders it made
(:func:`~edgespec.reproduce.folder.incomplete_run_removed` on REPORT.md), so a rerun to the
same ``--out`` is not refused as holding a run. Nothing rebuilds WISP's rows from
results.json, so a results.json without its REPORT.md would only block the rerun. Each
stage after the simulations says so as it starts (a bar, or a line when stderr is not a
terminal; nothing with ``--quiet``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.output_paths import write_text_atomically

STAGES = (
    "predictor study (W6, Theorem 1, W10)",
    "W7's acceptance runs",
    "W8's runs (Table 6)",
    "estimator fit (W9)",
    "rows, plots and REPORT.md",
)
"""What runs after the simulations (W1–W5), in order, as each stage's bar names it."""


@contextmanager
def stage(bar: Any, name: str) -> Iterator[None]:
    """One stage of :data:`STAGES` on ``bar``: shown as it starts, done as it ends."""
    task = bar.add_task(f"reproduce wisp: {name}", total=1)
    yield
    bar.advance(task)


@dataclass(frozen=True, slots=True)
class Written:
    """What the stages after the simulations wrote and computed."""

    rows: list[Any]
    files: list[str]
    """The scenario and profile files (the others are named where the report is written)."""
    chosen: tuple[tuple[str, str], ...]
    sensitivity: str


def reproduce(out: Path, *, quick: bool, workers: int, progress: bool, command: str) -> list[Any]:
    """Run W1–W10, write the run folder, print the table (and what a quick run leaves
    out); returns the rows. A run stopped before REPORT.md leaves nothing in ``out``."""
    from edgespec.reproduce.command import PAPERS
    from edgespec.reproduce.folder import incomplete_run_removed, results_text
    from edgespec.reproduce.printed import print_claims
    from edgespec.reproduce.wisp.predictor import PredictorPlan
    from edgespec.reproduce.wisp.quick import left_out
    from edgespec.reproduce.wisp.results_file import results_dict
    from edgespec.reproduce.wisp.runs import Plan, run_wisp
    from edgespec.sweeps.executor import make_executor
    from edgespec.sweeps.progress import progress_bar

    plan = Plan.quick() if quick else Plan.full()
    predictor_plan = PredictorPlan.quick() if quick else PredictorPlan.full()
    omitted = left_out(plan, predictor_plan)
    with incomplete_run_removed(out, PAPERS["wisp"].files, "REPORT.md"):  # one unit
        results, scenario_files = run_wisp(plan, make_executor(workers), out / "scenarios",
                                           progress)  # fmt: skip
        write_text_atomically(out / "results.json", results_text("wisp", results_dict(results)))
        with progress_bar(progress) as bar:
            rows = _after_the_runs(out, results, scenario_files, predictor_plan, command, bar)
            with stage(bar, STAGES[-1]):
                _write_report(out, results, rows, command, quick, omitted)
    print_claims(rows.rows, quick=quick, left_out=omitted)
    print(f"report: {out / 'REPORT.md'}")
    return rows.rows


def _after_the_runs(
    out: Path, results: Any, scenario_files: list[str], plan: Any, command: str, bar: Any
) -> Written:
    """W6–W10's runs and files, each stage on ``bar``; every row and the plots."""
    from edgespec.learn.stop.report import study_markdown
    from edgespec.profiling.run import cpu_name
    from edgespec.profiling.samples import load_samples
    from edgespec.reproduce.wisp.claims import goodput_choices
    from edgespec.reproduce.wisp.curve_claims import all_rows, operating_choice
    from edgespec.reproduce.wisp.estimator import (
        check_estimator,
        estimator_choice,
        estimator_dict,
        insert_w9,
        w9_rows,
    )
    from edgespec.reproduce.wisp.predictor import (
        acceptance_rows,
        predictor_choices,
        predictor_dict,
        run_predictor_study,
    )
    from edgespec.reproduce.wisp.predictor_claims import predictor_rows
    from edgespec.reproduce.wisp.runner import LATE_RULE, late_rule_choice
    from edgespec.reproduce.wisp.setup import choices
    from edgespec.reproduce.wisp.table6 import run_table6

    with stage(bar, STAGES[0]):
        predictor = run_predictor_study(plan)
    with stage(bar, STAGES[1]):
        predictor["acceptance"] = acceptance_rows(plan, predictor["point"], LATE_RULE)
    with stage(bar, STAGES[2]):
        table6 = run_table6(plan.setup, plan.goodput_devices, predictor["point"], LATE_RULE, out)
    predictor["table6"] = table6
    text = json.dumps(predictor_dict(predictor), indent=1) + "\n"
    write_text_atomically(out / "predictor.json", text)
    with stage(bar, STAGES[3]):
        samples = load_samples()  # W9: the bundled real profile, the same in every run
        estimator = check_estimator(samples.points)
    text = json.dumps(estimator_dict(estimator, samples), indent=1) + "\n"
    write_text_atomically(out / "estimator.json", text)
    rows = all_rows(results)
    rows += insert_w9(predictor_rows(predictor, cpu_name(), plan), w9_rows(estimator, samples))
    study = study_markdown(predictor["study"], command, time.strftime("%Y-%m-%d %H:%M"))
    write_text_atomically(out / "predictor.md", study)
    files = [*scenario_files, *table6.files]
    chosen = (*choices(results.plan.setup), *goodput_choices(results.plan, plan.goodput_devices))
    chosen += (late_rule_choice(), *operating_choice(results))
    chosen += (*predictor_choices(), estimator_choice(samples))
    return Written(rows, files, chosen, table6.speed.line())


def _write_report(
    out: Path, results: Any, done: Written, command: str, quick: bool, omitted: list[str]
) -> None:
    """The plots, then REPORT.md (the run's last file: a run stopped before it leaves
    nothing)."""
    from edgespec.metrics.plots import plot_violation_attribution
    from edgespec.reproduce.report_file import sensitivities_markdown, write_report
    from edgespec.reproduce.wisp.findings import findings, paper_errors
    from edgespec.reproduce.wisp.plots import plot_capacities, plot_violation_curves
    from edgespec.reproduce.wisp.readings import reading_line

    plot_violation_curves(out / "fig7_violation_curves.png", results)
    plot_capacities(out / "table2_capacities.png", results)
    files = [*done.files, "fig7_violation_curves.png", "table2_capacities.png"]
    files += ["predictor.md", "predictor.json", "estimator.json"]
    if results.attribution is not None:
        plot_violation_attribution(out / "fig8_attribution.png", results.attribution)
        files.append("fig8_attribution.png")
    files.append("results.json")
    title = "WISP (seed 000) reproduced" + (" — quick" if quick else "")
    unfinished = () if results.unfinished is None else (results.unfinished.line(),)
    sensitivities = (results.late.line(), *unfinished, reading_line(results), done.sensitivity)
    write_report(
        out / "REPORT.md", title, command, done.rows, done.chosen, files, quick=quick,
        findings=findings(results), paper_errors=paper_errors(),
        appendix=sensitivities_markdown(sensitivities), left_out=omitted,
    )  # fmt: skip
