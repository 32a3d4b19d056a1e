"""``edgespec sim`` on a drafting-server scenario (``system: drafting_server``): validate,
plan, simulate, say a profile the plan uses beyond what it measured (one line each on
stderr, as ``edgespec drafting-server --plan`` says it:
:func:`~edgespec.hardware.drafting_plan.plan_range_warnings`), print the report and write
the run folder (``pipeline.json``, ``scenario.yaml``)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgespec.config import dump_yaml
from edgespec.errors import UserInputError
from edgespec.output_paths import write_text_atomically
from edgespec.sim.run_folder import claim_run_folder, made_run_folder

PLAIN_ONLY = {
    "--sweep": "sweep",
    "--capacity": "capacity",
    "--shards": "shards",
    "--rounds": "rounds",
    "--verbose": "verbose",
}
"""Flags of ``edgespec sim`` that a drafting-server run does not take (flag → dest)."""

Bar = Callable[[contextlib.ExitStack[Any], str], Callable[[int, int], None]]
"""Makes a progress callback ``(done, total)`` whose bar ``stack`` closes, from its label
(:func:`edgespec.sim.commands.progress.lazy_bar`)."""


def check_drafting_server_flags(args: argparse.Namespace) -> None:
    """A flag the drafting-server run would ignore is an error, not silently dropped."""
    for flag, dest in PLAIN_ONLY.items():
        value = getattr(args, dest, None)
        if value is not None and value is not False:
            raise UserInputError(
                f"{flag} does not apply to a drafting-server scenario (system: "
                "drafting_server): it runs once, as a plain run"
            )


def run_drafting_server_command(args: argparse.Namespace, data: dict[str, Any], bar: Bar) -> int:
    """Run the scenario mapping ``data`` (overrides applied) under a progress bar made by
    ``bar`` (the ``sim`` command's; none with ``--quiet``); print; write ``--out``."""
    from rich.console import Console

    from edgespec.config.file_paths import anchored
    from edgespec.hardware.drafting_plan import plan_range_warnings
    from edgespec.sim.drafting_server.build import run_pipeline
    from edgespec.sim.drafting_server.report import report_lines, run_record
    from edgespec.sim.drafting_server.scenario import pipeline_scenario_from_dict

    check_drafting_server_flags(args)
    scenario = pipeline_scenario_from_dict(data)  # validate once, before any run
    out = claim_run_folder(args.out, scenario.name, args.overwrite, time.strftime("%Y%m%d-%H%M%S"))
    started = time.perf_counter()
    with made_run_folder(out, args.out is None):  # an unwritable --out fails before the run
        with contextlib.ExitStack() as stack:  # the bar gone before the report
            show = None if args.quiet else bar(stack, "planning, then simulating")
            run = run_pipeline(scenario, show)
        lengths = [(task.input_len, task.output_len) for task in run.obs.tasks]
        for warning in plan_range_warnings(scenario.pipeline, run.plan, lengths):
            print(f"edgespec sim: {warning}", file=sys.stderr, flush=True)
        wall_s = time.perf_counter() - started
        write_text_atomically(out / "pipeline.json", json.dumps(run_record(run), indent=2) + "\n")
        ran = anchored(data, Path.cwd())  # the overrides' relative paths: from anywhere too
        write_text_atomically(out / "scenario.yaml", dump_yaml(ran, sort_keys=False))
    console = Console(markup=False)
    for line in report_lines(run):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    console.print(
        f"simulated in {wall_s:.2f} s wall → {out}", highlight=False, markup=False, soft_wrap=True
    )
    return 0
