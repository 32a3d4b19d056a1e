"""``edgespec reproduce wisp``: run W1–W10, write the run folder (REPORT.md with its
Findings, the sensitivities and, in a quick run, what it leaves out), print the claims."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from edgespec.output_paths import write_text_atomically


def reproduce(out: Path, *, quick: bool, workers: int, progress: bool, command: str) -> list[Any]:
    """Run W1–W10, write the run folder, print the table (and what a quick run leaves
    out); returns the rows. A run stopped before results.json leaves nothing in ``out``."""
    from edgespec.learn.stop.report import study_markdown
    from edgespec.metrics.plots import plot_violation_attribution
    from edgespec.profiling.run import cpu_name
    from edgespec.profiling.samples import load_samples
    from edgespec.reproduce.command import PAPERS
    from edgespec.reproduce.folder import incomplete_run_removed, results_text
    from edgespec.reproduce.printed import print_claims
    from edgespec.reproduce.report_file import sensitivities_markdown, write_report
    from edgespec.reproduce.wisp.curve_claims import all_rows, operating_choice
    from edgespec.reproduce.wisp.estimator import (
        check_estimator,
        estimator_choice,
        estimator_dict,
        insert_w9,
        w9_rows,
    )
    from edgespec.reproduce.wisp.findings import findings, paper_errors
    from edgespec.reproduce.wisp.plots import plot_capacities, plot_violation_curves
    from edgespec.reproduce.wisp.predictor import (
        PredictorPlan,
        predictor_choices,
        predictor_dict,
        run_predictor_claims,
    )
    from edgespec.reproduce.wisp.predictor_claims import predictor_rows
    from edgespec.reproduce.wisp.quick import left_out
    from edgespec.reproduce.wisp.readings import reading_line
    from edgespec.reproduce.wisp.runner import LATE_RULE, late_rule_choice
    from edgespec.reproduce.wisp.runs import Plan, results_dict, run_wisp
    from edgespec.reproduce.wisp.setup import choices
    from edgespec.reproduce.wisp.table6 import run_table6
    from edgespec.sweeps.executor import make_executor

    plan = Plan.quick() if quick else Plan.full()
    with incomplete_run_removed(out, PAPERS["wisp"].files):  # a stopped run leaves nothing
        executor = make_executor(workers)
        results, scenario_files = run_wisp(plan, executor, out / "scenarios", progress)
        write_text_atomically(out / "results.json", results_text("wisp", results_dict(results)))
    rule = LATE_RULE
    predictor_plan = PredictorPlan.quick() if quick else PredictorPlan.full()
    predictor = run_predictor_claims(predictor_plan, rule)
    table6 = run_table6(
        predictor_plan.setup, predictor_plan.goodput_devices, predictor["point"], rule, out
    )
    predictor["table6"] = table6
    write_text_atomically(
        out / "predictor.json", json.dumps(predictor_dict(predictor), indent=1) + "\n"
    )
    samples = load_samples()  # W9: the bundled real profile, the same in every run
    estimator = check_estimator(samples.points)
    write_text_atomically(
        out / "estimator.json", json.dumps(estimator_dict(estimator, samples), indent=1) + "\n"
    )
    rows = all_rows(results)  # after every run's results are written: a failure keeps them
    found_rows = predictor_rows(predictor, cpu_name(), predictor_plan)
    rows += insert_w9(found_rows, w9_rows(estimator, samples))
    study = predictor["study"]
    write_text_atomically(
        out / "predictor.md", study_markdown(study, command, time.strftime("%Y-%m-%d %H:%M"))
    )
    plot_violation_curves(out / "fig7_violation_curves.png", results)
    plot_capacities(out / "table2_capacities.png", results)
    files = [*scenario_files, *table6.files, "fig7_violation_curves.png", "table2_capacities.png"]
    files += ["predictor.md", "predictor.json", "estimator.json"]
    if results.attribution is not None:
        plot_violation_attribution(out / "fig8_attribution.png", results.attribution)
        files.append("fig8_attribution.png")
    files.append("results.json")
    title = "WISP (seed 000) reproduced" + (" — quick" if quick else "")
    chosen = (*choices(plan.setup), late_rule_choice(), *operating_choice(results))
    chosen += (*predictor_choices(), estimator_choice(samples))
    found = findings(results)
    sensitivities = (results.late.line(), reading_line(results), table6.speed.line())
    omitted = left_out(plan, predictor_plan)
    write_report(
        out / "REPORT.md", title, command, rows, chosen, files, quick=quick, findings=found,
        paper_errors=paper_errors(),
        appendix=sensitivities_markdown(sensitivities), left_out=omitted,
    )  # fmt: skip
    print_claims(rows, quick=quick, left_out=omitted)
    print(f"report: {out / 'REPORT.md'}")
    return rows
