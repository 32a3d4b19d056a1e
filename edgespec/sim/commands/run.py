"""``edgespec sim``: run a scenario (a file, or a bundled scenario by name; the bundled
default when none is given), a sweep, or a capacity search; write the run folder and
print the summary table."""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path
from typing import Any

from edgespec.config import apply_overrides, check_repeats, located_in
from edgespec.errors import UserInputError
from edgespec.output_paths import write_text_atomically
from edgespec.sim.commands.flags import add_arguments as add_arguments
from edgespec.sim.commands.flags import check_flags, check_not_overridden, names_a_file
from edgespec.sim.commands.progress import lazy_bar
from edgespec.sim.commands.sweep import run_sweep_command, write_scenario_yaml


def _split(items: list[str]) -> tuple[str | None, list[str]]:
    path: str | None = None
    overrides = []
    for item in items:
        if "=" in item and not names_a_file(item):  # a file named k=v.yaml is a file
            overrides.append(item)
        elif path is None:
            path = item
        else:
            raise UserInputError(
                f"two scenario files given, {path} and {item}; only one may be "
                "(an override looks like key.path=value)"
            )
    check_repeats(overrides)
    return path, overrides


def run_scenario_dict(data: dict[str, Any]) -> Any:
    """A scenario dict's metrics (module-level, so a process pool can pickle it)."""
    from edgespec.sim.setup.scenario import scenario_from_dict
    from edgespec.sim.simulator import paused_gc, run_scenario

    with paused_gc():  # a run owns its worker process (or the CLI's)
        return run_scenario(scenario_from_dict(data))


def run(args: argparse.Namespace) -> int:
    """Parse the scenario (file or bundled name, plus overrides) once, then run it in the
    mode the flags ask for: a drafting server's run, a sweep, a capacity search, a
    sharded run or a plain one."""
    from edgespec.config.scenario_files import default_scenario_path, scenario_path
    from edgespec.sim.commands.checks import (
        check_added_entries,
        say_profile_ranges,
        say_trace_sampling,
    )
    from edgespec.sim.run_folder import claim_run_folder, made_run_folder
    from edgespec.sim.setup.scenario import read_scenario_file, scenario_from_dict
    from edgespec.sim.setup.system import system_of

    check_flags(args)
    path, overrides = _split(args.args)
    file = read_scenario_file(scenario_path(path) if path else default_scenario_path())
    data = apply_overrides(file.data, overrides)
    with located_in(file, overrides):  # a field's error names the file's line
        if system_of(data) == "drafting_server":  # Zhu et al.'s (sim/drafting_server/)
            from edgespec.sim.drafting_server.command import run_drafting_server_command

            return run_drafting_server_command(args, data, lazy_bar)
        check_not_overridden(args, overrides)
        if args.rounds:
            data = apply_overrides(data, ["record_rounds=true"])
        scenario = scenario_from_dict(data)  # validate once, before any run
        check_added_entries(file.data, overrides, scenario)  # a misspelt link or class
    say_profile_ranges(scenario)  # a server's profile used beyond what it measured
    say_trace_sampling(scenario)  # a trace replayed otherwise than it was captured
    out = claim_run_folder(args.out, scenario.name, args.overwrite, time.strftime("%Y%m%d-%H%M%S"))
    probed = [] if args.capacity is None else [f"{args.capacity}="]  # the key probes set
    varied = [*overrides, *(args.sweep or ()), *probed]
    claimed = args.out is None  # the default folder, made by its claim
    with located_in(file, varied), made_run_folder(out, claimed):  # and so does one found resolving
        if args.sweep:  # the policies, or at a field that a sweep's point or a probe made bad
            return run_sweep_command(args, data, out, run_scenario_dict)
        if args.capacity is not None:
            return _run_capacity(args, data, scenario, out)
        if args.shards is not None:
            return _run_sharded(args, data, out, scenario.record_rounds)
        return _run_plain(args, data, scenario, out)


def _run_capacity(args: argparse.Namespace, data: dict[str, Any], scenario: Any, out: Path) -> int:
    """``--capacity``: the largest value of a knob within ``--epsilon`` SLO violations
    (:func:`edgespec.sweeps.capacity.capacity_search`), for one class or all."""
    from edgespec.sim.commands.checks import (
        LateArrivalWarnings,
        check_capacity_workload,
        check_class_measured,
        check_scenario_dict,
    )
    from edgespec.sim.commands.sweep import capacity_rerun_command, write_rerun
    from edgespec.sim.setup.cells import count_step
    from edgespec.sweeps.capacity import (
        ProbeStep,
        capacity_search,
        class_violation,
        overall_violation,
    )

    check_capacity_workload(scenario)  # a device count that adds load, before any run
    violation = overall_violation(args.count_sure_misses)
    if args.slo_class is not None:  # one that runs can measure, before any run
        check_class_measured(scenario, args.slo_class)
        violation = class_violation(args.slo_class, args.count_sure_misses)
    warn = LateArrivalWarnings()  # a trace's late requests: the same at every probe
    result = capacity_search(
        data,
        args.capacity,
        run_scenario_dict,
        epsilon=args.epsilon,
        lo=args.lo,
        hi=args.hi,
        violation=violation,
        progress=not args.quiet,
        check=lambda given: warn(check_scenario_dict(given, kind="--capacity")),  # before a run
        step=ProbeStep(count_step(data, args.capacity), "auto_topology.cells"),
    )
    write_text_atomically(out / "capacity.json", json.dumps(result.to_dict(), indent=2) + "\n")
    write_rerun(out, data, capacity_rerun_command, args)
    _say_capacity(args, result, out)
    return 0


def _say_capacity(args: argparse.Namespace, result: Any, out: Path) -> None:
    """A capacity search's probes (the table, the rates compared with ε) and its answer."""
    from rich.console import Console

    from edgespec.metrics.formatting import percent
    from edgespec.metrics.summary import plain, print_runs, setting

    bound = " (at upper bound)" if result.at_upper_bound else ""
    if result.capacity is None:
        bound = f" (even {args.capacity}={plain(args.lo)} violates more than epsilon)"
    probes = sorted(result.probes, key=lambda p: p.value)
    console = Console(markup=False)
    print_runs([({args.capacity: p.value}, p.metrics) for p in probes], console, "probes")
    rates = ", ".join(f"{plain(p.value)} → {percent(p.violation_rate)}" for p in probes)
    console.print(f"violation searched (compared with epsilon; SLO violation above is every "
                  f"class's): {rates}")  # fmt: skip
    console.print(
        f"capacity {args.capacity} at epsilon={setting(args.epsilon)}"
        + ("" if args.slo_class is None else f" for class {args.slo_class}")
        + (" counting the unfinished requests sure to miss" if args.count_sure_misses else "")
        + f": {'None' if result.capacity is None else plain(result.capacity)}{bound}"
        f" → {out / 'capacity.json'}",
        soft_wrap=True,
    )


def _run_plain(args: argparse.Namespace, data: dict[str, Any], scenario: Any, out: Path) -> int:
    """One run (:func:`edgespec.sim.simulator.simulate`), its records streamed to the run
    folder; the summary printed."""
    from rich.console import Console

    from edgespec.metrics.record_files import RecordFiles
    from edgespec.metrics.summary import fixed, plain, print_summary
    from edgespec.sim.commands.checks import LateArrivalWarnings
    from edgespec.sim.setup.sources import late_arrivals
    from edgespec.sim.simulator import paused_gc, simulate

    started = time.perf_counter()
    with RecordFiles(out, rounds=scenario.record_rounds) as files, paused_gc():
        sim = simulate(scenario, sink=files, progress=not args.quiet)
    wall_s = time.perf_counter() - started
    LateArrivalWarnings()(late_arrivals(scenario, sim.num_late_arrivals))  # none in: refused
    metrics = files.finish(sim.duration_s, sim.num_servers)
    _write_run_folder(args, data, out, metrics, scenario.record_rounds)
    console = Console(markup=False)
    print_summary(metrics, console)
    _print_semantic(data, metrics, console)
    if args.verbose:
        console.print(f"handler set: {sim.path}")
    console.print(
        f"{scenario.name}: {plain(sim.num_rounds)} rounds, {plain(metrics.num_requests)} "
        f"requests, {plain(sim.duration_s, 6)} s simulated in {fixed(wall_s, 2)} s wall → {out}",
        highlight=False, markup=False, soft_wrap=True,  # one line, the folder as it is
    )  # fmt: skip
    return 0


def _write_run_folder(
    args: argparse.Namespace, data: dict[str, Any], out: Path, metrics: Any, rounds: bool
) -> None:
    """What a run folder holds besides its record files: metrics.json, the plots (read
    back from the record files), the violation attribution (``rounds``: the scenario's
    ``record_rounds``, which ``--rounds`` sets), scenario.yaml (its file paths absolute:
    it reruns the run from anywhere, with its rounds)."""
    from edgespec.metrics.record_files import read_plot_columns, read_rounds
    from edgespec.metrics.sinks import write_attribution, write_metrics_json

    # a semantic (lossy) run's verification rule beside the metrics it changes
    write_metrics_json(out / "metrics.json", metrics, semantic_fields(data, metrics))
    if not args.no_plots:
        from edgespec.metrics.plots import write_plots

        write_plots(out, metrics, *read_plot_columns(out))
    if rounds:
        write_attribution(out, read_rounds(out), plots=not args.no_plots)
    write_scenario_yaml(out, data)


def semantic_fields(data: dict[str, Any], metrics: Any) -> dict[str, Any] | None:
    """What metrics.json and the summary say of a semantic (lossy) run: the rule, T (``None``
    unless a table's share was read at it), the upload protocol, where the share comes from,
    and the committed tokens per round (the target's token in: WISV's AAL); exact: ``None``."""
    from edgespec.sim.setup.scenario import scenario_from_dict

    config = scenario_from_dict(data).verification
    if not config.semantic:
        return None
    rounds = metrics.num_rounds
    return {
        "verification": "semantic",
        "lossy": True,
        "threshold": config.threshold_value if config.table is not None else None,
        "upload": config.upload or "auto",
        "reject_share": config.reject_share,
        "table": config.table,
        "committed_per_round": metrics.num_output_tokens / rounds if rounds else None,
    }


def _print_semantic(data: dict[str, Any], metrics: Any, console: Any) -> None:
    from edgespec.metrics.summary import plain

    lossy = semantic_fields(data, metrics)
    if lossy is not None:
        threshold = lossy["threshold"]  # only a table's share is picked by it
        said = "" if threshold is None else f"threshold {plain(threshold)}, "
        source = (
            f"table {lossy['table']}"
            if lossy["table"] is not None
            else f"reject share {plain(lossy['reject_share'])}"
        )
        console.print(
            f"verification: semantic (lossy), {said}"
            f"upload {lossy['upload']}, {source}; committed per round "
            f"{plain(lossy['committed_per_round'])}"
        )


def _run_sharded(args: argparse.Namespace, data: dict[str, Any], out: Path, rounds: bool) -> int:
    """``--shards N``: the cells in N shards on the executor; the run folder as a single
    run writes it (records concatenated shard by shard; ``rounds``: with the rounds'),
    plus shards.json."""
    from rich.console import Console

    from edgespec.metrics.summary import fixed, plain, print_summary
    from edgespec.sim.shards import simulate_sharded
    from edgespec.sweeps.executor import make_executor

    started = time.perf_counter()
    executor = make_executor(args.workers, args.engine, args.address)
    with contextlib.ExitStack() as stack:
        show = None if args.quiet else lazy_bar(stack, f"shards ({args.engine})")
        run = simulate_sharded(data, args.shards, executor, out.resolve(), show)
    wall_s = time.perf_counter() - started
    _write_run_folder(args, data, out, run.metrics, rounds)
    shards = [
        {"cells": list(s.cells), "num_rounds": s.num_rounds, "wall_s": round(s.wall_s, 3)}
        for s in run.shards
    ]
    write_text_atomically(out / "shards.json", json.dumps(shards, indent=2) + "\n")
    console = Console(markup=False)
    print_summary(run.metrics, console)
    _print_semantic(data, run.metrics, console)
    if len(run.shards) < args.shards:  # at most one shard per cell
        console.print(
            f"--shards {args.shards}: the scenario has {len(run.shards)} cells, "
            f"so it ran as {len(run.shards)} shards"
        )
    num_shards, workers = len(run.shards), min(args.workers, len(run.shards))  # as started
    console.print(
        f"{data.get('name', 'scenario')}: {plain(run.num_rounds)} rounds in "
        f"{num_shards} shard{'' if num_shards == 1 else 's'} ({args.engine}, {workers} "
        f"worker{'' if workers == 1 else 's'}), "
        f"{plain(run.metrics.num_requests)} requests, {plain(run.metrics.duration_s, 6)} s "
        f"simulated in {fixed(wall_s, 2)} s wall → {out}",
        highlight=False, markup=False, soft_wrap=True,
    )  # fmt: skip
    return 0
