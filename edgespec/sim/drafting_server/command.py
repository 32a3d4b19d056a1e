"""``edgespec sim`` on a drafting-server scenario (``system: drafting_server``): validate,
plan, simulate, print the report and write the run folder (``pipeline.json``,
``scenario.yaml``)."""

from __future__ import annotations

import argparse
import json
import time
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


def check_drafting_server_flags(args: argparse.Namespace) -> None:
    """A flag the drafting-server run would ignore is an error, not silently dropped."""
    for flag, dest in PLAIN_ONLY.items():
        value = getattr(args, dest, None)
        if value is not None and value is not False:
            raise UserInputError(
                f"{flag} does not apply to a drafting-server scenario (system: "
                "drafting_server): it runs once, as a plain run"
            )


def run_drafting_server_command(args: argparse.Namespace, data: dict[str, Any]) -> int:
    """Run the scenario mapping ``data`` (overrides applied); print; write ``--out``."""
    from rich.console import Console

    from edgespec.sim.drafting_server.build import run_pipeline
    from edgespec.sim.drafting_server.report import report_lines, run_record
    from edgespec.sim.drafting_server.scenario import pipeline_scenario_from_dict

    check_drafting_server_flags(args)
    scenario = pipeline_scenario_from_dict(data)  # validate once, before any run
    out = claim_run_folder(args.out, scenario.name, args.overwrite, time.strftime("%Y%m%d-%H%M%S"))
    started = time.perf_counter()
    with made_run_folder(out):  # before the run: an unwritable --out fails at once
        run = run_pipeline(scenario)
        wall_s = time.perf_counter() - started
        write_text_atomically(out / "pipeline.json", json.dumps(run_record(run), indent=2) + "\n")
        write_text_atomically(out / "scenario.yaml", dump_yaml(data, sort_keys=False))
    console = Console(markup=False)
    for line in report_lines(run):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    console.print(
        f"simulated in {wall_s:.2f} s wall → {out}", highlight=False, markup=False, soft_wrap=True
    )
    return 0
