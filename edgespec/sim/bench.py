"""``edgespec bench sim``: simulated verification rounds per wall-clock second and peak
memory on the reference scenario (``edgespec/data/scenarios/bench.yaml``)."""

from __future__ import annotations

import argparse
import gc
import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from edgespec.config import apply_overrides, read_yaml


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", choices=["sim"], help="what to benchmark")
    parser.add_argument("overrides", nargs="*", metavar="key.path=value")
    parser.add_argument(
        "--straightforward", action="store_true", help="disable the fast path (fast_path=false)"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="also run the straightforward path and compare the metrics (must be identical)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run N times; report the run with the least CPU time and the median rate "
        "(the machine is shared: CPU time is the steadier measure)",
    )
    parser.add_argument("--profile", type=Path, default=None, help="write cProfile stats here")
    parser.add_argument("--json", type=Path, default=None, help="also write the result as JSON")


def synthetic_acceptance_trace(path: Path, seed: int, num_requests: int = 512) -> Path:
    """A stand-in acceptance trace (used only while edgespec/data/traces/ is empty):
    per-output-position 0/1 draws from a fixed acceptance rate of 0.7."""
    import numpy as np

    rng = np.random.default_rng(seed)
    with path.open("w") as fh:
        for i in range(num_requests):
            seq = (rng.random(256) < 0.7).astype(int).tolist()
            record = {
                "request_id": f"syn{i}",
                "arrival_ms": 0.0,
                "prompt_tokens": 1,
                "output_tokens": 256,
                "drafter_id": 0,
                "acceptance_seq": seq,
            }
            fh.write(json.dumps(record) + "\n")
    return path


def run(args: argparse.Namespace) -> int:
    from edgespec.sim.scenario import default_scenario_path, scenario_from_dict
    from edgespec.sim.simulator import paused_gc, simulate
    from edgespec.sim.workload import bundled_traces

    bench_yaml = default_scenario_path().with_name("bench.yaml")
    data: dict[str, Any] = read_yaml(bench_yaml)
    with tempfile.TemporaryDirectory() as tmp:
        traces = [str(p) for p in bundled_traces()]
        source = "bundled real traces"
        if not traces:
            traces = [str(synthetic_acceptance_trace(Path(tmp) / "synthetic.jsonl", 0))]
            source = "synthetic trace (i.i.d. 0.7 per position; no real traces bundled yet)"
        data = apply_overrides(data, [f"acceptance.traces={json.dumps(traces)}"])
        extra = ["fast_path=false"] if args.straightforward else []
        scenario = scenario_from_dict(data, [*args.overrides, *extra])
        if args.repeat < 1:
            raise SystemExit(f"--repeat must be >= 1, got {args.repeat}")
        runs: list[tuple[float, float]] = []  # (cpu_s, wall_s) per run
        for _ in range(args.repeat):
            gc.collect()  # the previous run's cycles (runs go with the collector paused)
            started = time.perf_counter()
            cpu_started = time.process_time()
            if args.profile is not None:
                import cProfile

                profiler = cProfile.Profile()
                with paused_gc():
                    result = profiler.runcall(simulate, scenario, keep_records=False)
                profiler.dump_stats(str(args.profile))
            else:
                with paused_gc():
                    result = simulate(scenario, keep_records=False)
            runs.append((time.process_time() - cpu_started, time.perf_counter() - started))
        cpu_s, wall_s = min(runs)
        median_cpu_s = sorted(c for c, _ in runs)[len(runs) // 2]
        identical = other = None
        other_cpu_s = 0.0
        if args.check:
            other_scenario = scenario_from_dict(
                data, [*args.overrides, f"fast_path={args.straightforward}"]
            )
            gc.collect()
            other_started = time.process_time()
            with paused_gc():
                other = simulate(other_scenario, keep_records=False)
            other_cpu_s = time.process_time() - other_started
            assert other.metrics is not None and result.metrics is not None
            identical = other.metrics.to_dict() == result.metrics.to_dict()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    assert result.metrics is not None
    report = {
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
        "repeats": args.repeat,
        "events_per_s": round(result.num_events / wall_s),
        "peak_rss_mib": round(peak_mib, 1),
    }
    if identical is not None and other is not None:
        report["identical_to_other_path"] = identical
        report["other_path"] = other.path
        report["other_rounds_per_cpu_s"] = round(other.num_rounds / other_cpu_s)
    for key, value in report.items():
        print(f"{key:>14}: {value}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if identical in (None, True) else 1
