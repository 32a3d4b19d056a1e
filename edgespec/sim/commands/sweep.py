"""``edgespec sim --sweep``: every grid point checked, then each run on the executor, each
kept as it finishes so that the same sweep stopped and run again resumes
(:mod:`edgespec.sweeps.kept_points`); the sweep's folder holds ``sweep.json`` and
``sweep.csv`` (the points' metrics) and what reruns it: ``scenario.yaml`` (the base
scenario, as a plain run writes it) and ``command.json`` (the command that reruns the sweep
from that file); a ``--capacity`` search's folder holds the same two beside its
``capacity.json``. Also the scenario.yaml every run folder holds
(:func:`write_scenario_yaml`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgespec.config import dump_yaml
from edgespec.output_paths import write_text_atomically
from edgespec.sweeps.kept_points import KeptPoints, prune, sweeps_cache

COMMAND_FILE = "command.json"
"""The file of a sweep's folder that holds the command rerunning it (:func:`rerun_command`)."""


def write_scenario_yaml(out: Path, data: dict[str, Any]) -> Path:
    """``out/scenario.yaml``: the scenario ``data`` that ran, its file paths (the overrides'
    relative ones too) made absolute, so that it reruns the run from anywhere."""
    from edgespec.config.file_paths import anchored

    path = out / "scenario.yaml"
    write_text_atomically(path, dump_yaml(anchored(data, Path.cwd()), sort_keys=False))
    return path


def rerun_command(args: argparse.Namespace, scenario_yaml: Path) -> list[str]:
    """The command that reruns the sweep ``args`` asked for from its folder's
    ``scenario_yaml`` (an absolute path): the same ``--sweep`` specs, workers and engine."""
    command = ["edgespec", "sim", str(scenario_yaml.resolve()), "--sweep", *args.sweep]
    command += ["--workers", str(args.workers), "--engine", args.engine]
    return command + ([] if args.address is None else ["--address", args.address])


def capacity_rerun_command(args: argparse.Namespace, scenario_yaml: Path) -> list[str]:
    """The command that reruns the capacity search ``args`` asked for from its folder's
    ``scenario_yaml``: the same key, bounds, ε, class and count."""
    command = ["edgespec", "sim", str(scenario_yaml.resolve()), "--capacity", args.capacity]
    command += ["--lo", repr(args.lo), "--hi", repr(args.hi), "--epsilon", repr(args.epsilon)]
    command += [] if args.slo_class is None else ["--slo-class", args.slo_class]
    return command + (["--count-sure-misses"] if args.count_sure_misses else [])


def write_rerun(out: Path, data: dict[str, Any], command_of: Callable[..., list[str]],
                args: argparse.Namespace) -> None:  # fmt: skip
    """``out/scenario.yaml`` and ``out/command.json``, the command ``command_of`` makes."""
    command = command_of(args, write_scenario_yaml(out, data))
    write_text_atomically(out / COMMAND_FILE, json.dumps({"command": command}, indent=2) + "\n")


def _say_kept(kept: KeptPoints) -> None:
    """On stderr, how many points a stopped sweep kept, and that the same command resumes
    them (nothing when it kept none)."""
    num_kept = len(list(kept.folder.glob("point-*.pickle"))) if kept.folder.is_dir() else 0
    if num_kept:
        print(f"sweep: {num_kept} finished point(s) kept in {kept.folder}; the same command "
              "runs only the rest", file=sys.stderr)  # fmt: skip


def run_sweep_command(
    args: argparse.Namespace, data: dict[str, Any], out: Path, run: Callable[[dict[str, Any]], Any]
) -> int:
    """``--sweep``: the sweep's kept points held (a second run of the same sweep meanwhile
    is refused: :meth:`~edgespec.sweeps.kept_points.KeptPoints.held`), every grid point
    validated, then each run (``run``, which must pickle, on
    :func:`edgespec.sweeps.grid.run_sweep`); the folder written (the module docstring) and
    the sweep's table printed (:func:`edgespec.sweeps.sweep_table.print_sweep`)."""
    from rich.console import Console

    from edgespec.metrics.summary import plain
    from edgespec.sim.commands.checks import LateArrivalWarnings, check_scenario_dict
    from edgespec.sweeps import grid as sweep_grid
    from edgespec.sweeps.sweep_table import print_sweep

    grid, warn = sweep_grid.parse_grid(args.sweep), LateArrivalWarnings()
    texts = sweep_grid.override_text
    prune(sweeps_cache(), time.time())
    with KeptPoints.for_sweep(sweeps_cache(), data, grid).held() as kept:
        sweep_grid.check_points(  # every point built (a misspelt key, a bad param...) first
            sweep_grid.grid_points(grid),
            lambda point: warn(check_scenario_dict(data, [texts(k, v) for k, v in point.items()])),
            progress=not args.quiet,
        )
        points, (json_path, csv_path) = _run_points(args, (data, grid), out, run, kept)
    console = Console(markup=False)
    print_sweep(points, console)  # one row per point, or the metrics' ranges over many
    console.print(f"sweep: {plain(len(points))} runs → {json_path}, {csv_path}", soft_wrap=True)
    return 0


def _run_points(
    args: argparse.Namespace,
    sweep: tuple[dict[str, Any], dict[str, list[Any]]],
    out: Path,
    run: Callable[[dict[str, Any]], Any],
    kept: KeptPoints,
) -> tuple[list[Any], tuple[Path, Path]]:
    """The ``sweep``'s points (its base scenario and grid) run, but those ``kept`` holds;
    its folder written, ``kept`` removed; when stopped or failing, how many points it kept
    said on stderr."""
    from edgespec.sweeps import grid as sweep_grid
    from edgespec.sweeps.executor import make_executor

    data, grid = sweep
    try:
        executor = make_executor(args.workers, args.engine, args.address)
        points = sweep_grid.run_sweep(
            data, grid, run, progress=not args.quiet, executor=executor, kept=kept
        )
        paths = sweep_grid.write_sweep(out / "sweep", points)
        write_rerun(out, data, rerun_command, args)
    except BaseException:
        _say_kept(kept)
        raise
    kept.remove()
    return points, paths
