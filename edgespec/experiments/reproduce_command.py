"""``edgespec reproduce <seed> [--quick]``: re-run a paper's claims and compare.

Writes ``runs/reproduce-<seed>-<time>/`` (REPORT.md, the scenario files it ran, plots,
results.json) and prints the claims table. Seeds not reproduced yet exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

SEEDS = ("wisp", "dsd", "zhu", "wisv")
BUILT = ("wisp", "dsd")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "seed", metavar="PAPER", choices=SEEDS, help=f"which paper: {', '.join(SEEDS)}"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a reduced run (CI): fewer classes, shorter runs"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default runs/reproduce-PAPER-<time>)"
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="local processes for the runs (default 1)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    if args.seed not in BUILT:
        print(f"edgespec reproduce {args.seed}: not reproduced yet", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("edgespec reproduce: --workers must be >= 1", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(1)  # this command owns its process; its MLPs are tiny
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out: Path = args.out or Path("runs") / f"reproduce-{args.seed}-{stamp}"
    command = "edgespec reproduce " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    reproduce = reproduce_wisp if args.seed == "wisp" else reproduce_dsd
    reproduce(
        out,
        quick=args.quick,
        workers=args.workers,
        progress=not args.quiet,
        command=command.strip(),
    )
    return 0


def reproduce_wisp(
    out: Path, *, quick: bool, workers: int, progress: bool, command: str
) -> list[Any]:
    """Run W1–W8 and W10, write the run folder, print the table; returns the claim rows."""
    from edgespec.experiments.claims import print_claims, write_report
    from edgespec.experiments.executor import make_executor
    from edgespec.experiments.reproduce_wisp import Plan, results_dict, run_wisp
    from edgespec.experiments.wisp_claims import all_rows
    from edgespec.experiments.wisp_plots import plot_capacities, plot_violation_curves
    from edgespec.experiments.wisp_predictor import (
        PredictorPlan,
        predictor_choices,
        predictor_dict,
        run_predictor_claims,
    )
    from edgespec.experiments.wisp_predictor_claims import predictor_rows
    from edgespec.experiments.wisp_setup import choices
    from edgespec.learn.stop_report import study_markdown
    from edgespec.metrics.plots import plot_violation_attribution

    plan = Plan.quick() if quick else Plan.full()
    out.mkdir(parents=True, exist_ok=True)
    results, scenario_files = run_wisp(plan, make_executor(workers), out / "scenarios", progress)
    rows = all_rows(results)
    predictor = run_predictor_claims(PredictorPlan.quick() if quick else PredictorPlan.full())
    rows += predictor_rows(predictor)
    study = predictor["study"]
    (out / "predictor.md").write_text(
        study_markdown(study, command, time.strftime("%Y-%m-%d %H:%M"))
    )
    (out / "predictor.json").write_text(json.dumps(predictor_dict(predictor), indent=1) + "\n")
    plot_violation_curves(out / "fig7_violation_curves.png", results)
    plot_capacities(out / "table2_capacities.png", results)
    files = [*scenario_files, "fig7_violation_curves.png", "table2_capacities.png"]
    files += ["predictor.md", "predictor.json"]
    if results.attribution is not None:
        plot_violation_attribution(out / "fig8_attribution.png", results.attribution)
        files.append("fig8_attribution.png")
    (out / "results.json").write_text(json.dumps(results_dict(results), indent=2) + "\n")
    files.append("results.json")
    title = "WISP (seed 000) reproduced" + (" — quick" if quick else "")
    chosen = (*choices(plan.setup), *predictor_choices())
    write_report(out / "REPORT.md", title, command, rows, chosen, files)
    print_claims(rows)
    print(f"report: {out / 'REPORT.md'}")
    return rows


def reproduce_dsd(
    out: Path, *, quick: bool, workers: int, progress: bool, command: str
) -> list[Any]:
    """Run D2–D7, write the run folder, print the table; returns the claim rows."""
    from edgespec.experiments.claims import print_claims, write_report
    from edgespec.experiments.dsd_claims import all_rows
    from edgespec.experiments.dsd_plots import plot_dsd
    from edgespec.experiments.dsd_setup import CHOICES
    from edgespec.experiments.executor import make_executor
    from edgespec.experiments.reproduce_dsd import DsdPlan, results_dict, run_dsd

    plan = DsdPlan.quick() if quick else DsdPlan.full()
    out.mkdir(parents=True, exist_ok=True)
    results, files = run_dsd(plan, make_executor(workers), out / "scenarios", progress)
    rows = all_rows(results)
    files += plot_dsd(out, results)
    (out / "results.json").write_text(json.dumps(results_dict(results), indent=2) + "\n")
    files.append("results.json")
    title = "DSD (seed 004) reproduced" + (" — quick" if quick else "")
    write_report(out / "REPORT.md", title, command, rows, CHOICES, files)
    print_claims(rows)
    print(f"report: {out / 'REPORT.md'}")
    return rows
