"""``edgespec bench sim|policy|memory``: simulated verification rounds per wall-clock second
and peak memory on the reference scenario (``edgespec/data/scenarios/bench.yaml``); the
batching policies' decision time; ns per random object access as the objects grow.

The three share these flags (``args.target`` names the one chosen)."""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import marshal
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgespec.config import YamlFile, check_repeats, located_in
from edgespec.errors import UserInputError
from edgespec.output_paths import output_file, write_atomically, write_text_atomically

if TYPE_CHECKING:
    from edgespec.sim.setup.scenario import Scenario
    from edgespec.sim.simulator import SimResult


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "overrides",
        nargs="*",
        default=[],
        metavar="key.path=value",
        help="sim only: overrides of the bundled bench.yaml scenario (default: none)",
    )
    parser.add_argument(
        "--straightforward",
        action="store_true",
        help="time the reference handler set (fast_path=false)",
    )
    parser.add_argument(
        "--handlers",
        default=None,
        metavar="NAME",
        help="time this handler set by name (edgespec.sim.handler_sets: reference, "
        "every_hop, inlined, inbound, fast; inbound calls every policy); compared with "
        "the reference",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="kept for old command lines: the other path is always timed and compared "
        "(unless --one-path)",
    )
    parser.add_argument(
        "--one-path",
        action="store_true",
        help="time only the chosen path (default: also the other one, compared)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help=f"sim and policy: run N times (default {REPEAT['sim']}, policy {REPEAT['policy']}; "
        f"at most {MAX_REPEAT:,}); report the run with the least CPU time and the median rate "
        "(the machine is shared: CPU time is the steadier measure)",
    )
    parser.add_argument(
        "--profile", type=output_file, default=None, help="sim only: write cProfile stats here"
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar (default: one per timed run when stderr is a terminal)",
    )
    parser.add_argument(
        "--json", type=output_file, default=None, help="also write the result as JSON"
    )


def synthetic_acceptance_trace(path: Path, seed: int, num_requests: int = 512) -> Path:
    """A stand-in acceptance trace (used only while edgespec/data/traces/ is empty):
    per-output-position 0/1 draws from a fixed acceptance rate of 0.7."""
    import numpy as np

    rng = np.random.default_rng(seed)
    fixed = {"arrival_ms": 0.0, "prompt_tokens": 1, "output_tokens": 256, "drafter_id": 0}

    def record(i: int) -> dict[str, Any]:
        seq = (rng.random(256) < 0.7).astype(int).tolist()
        return {"request_id": f"syn{i}", **fixed, "acceptance_seq": seq}

    write_text_atomically(path, "".join(json.dumps(record(i)) + "\n" for i in range(num_requests)))
    return path


def _timed(
    scenario: Scenario,
    repeat: int,
    profile: Path | None,
    progress: bool = False,
    handlers: str | None = None,
) -> tuple[SimResult, list[float]]:
    """The result of ``repeat`` runs and their (CPU s, wall s), with the collector paused
    (``progress``: a progress bar, updated every 65,536 events; never under cProfile)."""
    from edgespec.sim.simulator import paused_gc, simulate

    runs: list[tuple[float, float]] = []
    for _ in range(repeat):
        gc.collect()  # the previous run's cycles (runs go with the collector paused)
        started = time.perf_counter()
        cpu_started = time.process_time()
        if profile is not None:
            profiler = cProfile.Profile()
            with paused_gc():
                result = profiler.runcall(simulate, scenario, keep_records=False, handlers=handlers)
            profiler.create_stats()  # dump_stats's content, written whole (the lambda runs now)
            write_atomically(profile, lambda fh: marshal.dump(profiler.stats, fh))  # noqa: B023
        else:
            with paused_gc():
                result = simulate(
                    scenario, keep_records=False, progress=progress, handlers=handlers
                )
        runs.append((time.process_time() - cpu_started, time.perf_counter() - started))
    return result, [c for c, _ in runs] + [w for _, w in runs]


def _bench_data(tmp: Path) -> tuple[YamlFile, str, str]:
    """bench.yaml, the override that gives it the bundled traces (or a synthetic one),
    and which traces they are."""
    from edgespec.config.scenario_files import default_scenario_path
    from edgespec.sim.setup.scenario import read_scenario_file
    from edgespec.sim.setup.workload import bundled_traces

    file = read_scenario_file(default_scenario_path().with_name("bench.yaml"))
    traces = [str(p) for p in bundled_traces()]
    source = "bundled real traces"
    if not traces:
        traces = [str(synthetic_acceptance_trace(tmp / "synthetic.jsonl", 0))]
        source = "synthetic trace (i.i.d. 0.7 per position; no real traces bundled yet)"
    return file, f"acceptance.traces={json.dumps(traces)}", source


REPEAT = {"sim": 1, "policy": 3}
"""``--repeat`` when not given, for the benchmarks it acts in (not ``bench memory``)."""

MAX_REPEAT = 1000
"""The most runs ``--repeat`` may ask for."""

SIM_ONLY = ("--straightforward", "--handlers", "--check", "--one-path", "--profile")
"""Flags that act only on ``bench sim``."""


def check_flags(args: argparse.Namespace) -> None:
    """Flags out of range, given where they do nothing or contradicting each other: one
    line before anything runs; the output files' folders made."""
    from edgespec.output_paths import check_distinct_outputs

    if args.repeat is not None:
        if args.repeat < 1:
            raise UserInputError(f"--repeat must be >= 1, got {args.repeat}")
        if args.repeat > MAX_REPEAT:
            raise UserInputError(f"--repeat must be <= {MAX_REPEAT:,}, got {args.repeat}")
        if args.target not in REPEAT:
            raise UserInputError("--repeat applies only to bench sim and bench policy")
    args.repeat = args.repeat or REPEAT.get(args.target, 1)
    check_distinct_outputs(("--profile", args.profile), ("--json", args.json))  # one file each
    if args.target != "sim" and args.overrides:
        raise UserInputError(
            f"takes no key.path=value overrides (bench sim does), got {args.overrides}"
        )
    check_repeats(args.overrides)
    for flag in SIM_ONLY:
        if args.target != "sim" and getattr(args, flag[2:].replace("-", "_")) not in (None, False):
            raise UserInputError(f"{flag} applies only to bench sim")
    given = next((o for o in args.overrides if o.partition("=")[0].strip() == "fast_path"), None)
    if args.straightforward and given is not None:
        raise UserInputError(
            f"--straightforward sets fast_path=false, the override {given!r} sets it too: "
            "give one of them"
        )
    if args.handlers is not None and (args.straightforward or given is not None):
        said = "--straightforward times the reference handler set" if args.straightforward \
            else f"the override {given!r} chooses the path"  # fmt: skip
        raise UserInputError(f"{said}, --handlers {args.handlers} names one: give one of them")
    if args.check and args.one_path:
        raise UserInputError(
            "--check compares with the other path, --one-path times only one: give one of them"
        )
    for path in (args.json, args.profile):  # their folders made before the benchmark runs
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)


def run(args: argparse.Namespace) -> int:
    from edgespec.sim.setup.scenario import scenario_from_dict

    check_flags(args)
    if args.target == "policy":
        return _bench_policies(args)
    if args.target == "memory":
        return _bench_memory(args)
    with tempfile.TemporaryDirectory() as tmp:
        file, traces, source = _bench_data(Path(tmp))
        overrides = [traces, *args.overrides, *(["fast_path=false"] * args.straightforward)]
        with located_in(file, overrides):  # an error at bench.yaml's field names its line
            scenario = scenario_from_dict(file.data, overrides)
        if scenario.record_rounds:  # and the handler set timed would be one without them
            raise UserInputError("record_rounds=true: bench sim keeps no records, so no "
                                 "round would be recorded; drop it (`edgespec sim --rounds` "
                                 "keeps them)")  # fmt: skip
        fast = scenario.fast_path and args.handlers != "reference"
        progress = not args.quiet and sys.stderr.isatty()
        result, times = _timed(scenario, args.repeat, args.profile, progress, args.handlers)
        other = other_times = None
        if not args.one_path:  # the other path, as many times, compared
            other_path = f"fast_path={str(not fast).lower()}"
            other_scenario = scenario_from_dict(file.data, [traces, *args.overrides, other_path])
            other, other_times = _timed(other_scenario, args.repeat, None, progress)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    report = _report(scenario, result, times, args.repeat, source, peak_mib)
    identical = None
    if other is not None and other_times is not None:
        assert other.metrics is not None and result.metrics is not None
        identical = other.metrics.to_dict() == result.metrics.to_dict()
        report["identical_to_other_path"] = identical
        report["other_path"] = other.path
        report["other_rounds_per_cpu_s"] = round(other.num_rounds / min(other_times[: args.repeat]))
        name, other_name = ("fast", "reference") if fast else ("reference", "fast")
        if args.handlers is not None and args.handlers not in ("fast", "reference"):
            name = args.handlers
        report[f"{name}_rounds_per_cpu_s"] = report["rounds_per_cpu_s"]
        report[f"{other_name}_rounds_per_cpu_s"] = report["other_rounds_per_cpu_s"]
    for key, value in report.items():
        print(f"{key:>14}: {value}")
    if args.json is not None:
        write_text_atomically(args.json, json.dumps(report, indent=2) + "\n")
    return 0 if identical in (None, True) else 1


def _bench_policies(args: argparse.Namespace) -> int:
    """Decision time of every registered batching policy at queue depths 10/100/1,000."""
    from edgespec.sim.policy_bench import bench_policies

    rows = bench_policies(repeat=args.repeat)
    width = max((len(str(row["policy"])) for row in rows), default=0)
    for row in rows:
        name, depth, us = row["policy"], row["queue_depth"], row["us_per_decision"]
        print(f"{name:>{width}} depth {depth:>5}: {us:9.1f} µs")
    if args.json is not None:
        write_text_atomically(args.json, json.dumps(rows, indent=2) + "\n")
    return 0


def _bench_memory(args: argparse.Namespace) -> int:
    """ns per random object access at 2k/20k/100k/1M objects (edgespec.sim.memory_bench)."""
    from edgespec.sim.memory_bench import access_costs

    rows = access_costs()
    for row in rows:
        print(f"{row.num_objects:>9,} objects: {row.ns_per_access:6.0f} ns per access")
    if args.json is not None:
        payload = [{"num_objects": r.num_objects, "ns_per_access": r.ns_per_access} for r in rows]
        write_text_atomically(args.json, json.dumps(payload, indent=2) + "\n")
    return 0


def _report(
    scenario: Scenario, result: SimResult, times: list[float], repeat: int, source: str,
    peak_mib: float,
) -> dict[str, Any]:  # fmt: skip
    """The timed path's numbers: least-CPU run, median, events, memory."""
    cpu = times[:repeat]
    cpu_s = min(cpu)
    wall_s = times[repeat + cpu.index(cpu_s)]
    median_cpu_s = sorted(cpu)[len(cpu) // 2]
    assert result.metrics is not None
    return {
        "scenario": scenario.name,
        "fast_path": scenario.fast_path,
        "path": result.path,
        "acceptance": source,
        "simulated_s": result.duration_s,
        "num_devices": sum(p.count for p in scenario.auto_topology.devices),
        "num_servers": result.num_servers,
        "num_rounds": result.num_rounds,
        "num_events": result.num_events,
        "num_requests": result.metrics.num_requests,
        "wall_s": round(wall_s, 3),
        "cpu_s": round(cpu_s, 3),
        "rounds_per_s": round(result.num_rounds / wall_s),
        "rounds_per_cpu_s": round(result.num_rounds / cpu_s),
        "median_rounds_per_cpu_s": round(result.num_rounds / median_cpu_s),
        "repeats": repeat,
        "events_per_s": round(result.num_events / wall_s),
        "peak_rss_mib": round(peak_mib, 1),
    }
