"""``edgespec reproduce dsd``: DSD's claims D2–D7 (SEED-NOTES §5) against the simulator.

D2 Fig. 5 policy stacks (Default → S4); D3 Fig. 6 distributed vs fused over RTT; D4/D5
Table 2 (Static vs Dynamic vs AWC over 600/1,000 drafts × RTT 10/30 ms × three datasets);
D6 Figs. 7–8 JSQ vs round-robin over the number of drafts; D7 Figs. 9–10 FIFO vs LAB. The
setting is :mod:`dsd_setup`'s, fixed once. Every run is one simulator run through a sweep
executor (``--workers``); each is reduced to a :class:`DsdRunSummary`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from edgespec.metrics.types import SystemMetrics
from edgespec.reproduce.dsd.setup import DATASETS, STACKS, DsdSetup, scenario
from edgespec.reproduce.jobs import RunJob, run_all, write_scenario
from edgespec.sweeps.executor import SweepExecutor
from edgespec.sweeps.grid import progress_bar

TABLE_CONFIGS: dict[str, tuple[int, float]] = {
    "C1": (600, 10.0),
    "C2": (1000, 10.0),
    "C3": (600, 30.0),
    "C4": (1000, 30.0),
}
"""Table 2's configurations: (drafts, RTT ms), all with 20 targets."""
WINDOWS: tuple[str, ...] = ("static", "dynamic", "awc")


@dataclass(frozen=True, slots=True)
class DsdPlan:
    """How much to run: the full reproduction or ``--quick`` (CI)."""

    setup: DsdSetup
    datasets: tuple[str, ...]
    table_configs: tuple[str, ...]
    crossover_rtts_ms: tuple[float, ...]
    sweep_drafts: tuple[int, ...]
    stack_drafts: int = 600

    @staticmethod
    def full() -> DsdPlan:
        return DsdPlan(
            DsdSetup(),
            DATASETS,
            tuple(TABLE_CONFIGS),
            (5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 100.0, 120.0),
            (400, 600, 800, 1000, 1200, 1600, 2000),
        )

    @staticmethod
    def quick() -> DsdPlan:
        return DsdPlan(
            replace(DsdSetup(), duration_s=12.0),
            ("gsm8k",),
            ("C1",),
            (10.0, 60.0, 120.0),
            (400, 1200),
        )


@dataclass(frozen=True, slots=True)
class DsdRunSummary:
    """What the claims read of one run. ``ttft_ms`` is DSD-Sim's TTFT, from when the
    draft device takes the request up (``SystemMetrics.service_ttft``);
    ``ttft_from_arrival_ms`` also counts the wait for a busy device."""

    throughput_requests_per_s: float
    ttft_ms: float | None
    tpot_ms: float | None
    num_requests: int
    ttft_from_arrival_ms: float | None = None

    @staticmethod
    def of(metrics: SystemMetrics) -> DsdRunSummary:
        return DsdRunSummary(
            metrics.throughput_requests_per_s,
            None if metrics.service_ttft is None else metrics.service_ttft.mean_s * 1e3,
            None if metrics.tpot is None else metrics.tpot.mean_s * 1e3,
            metrics.num_requests,
            None if metrics.ttft is None else metrics.ttft.mean_s * 1e3,
        )


def summary_metric(summary: DsdRunSummary | None, metric: str) -> float | None:
    """``thr`` (req/s), ``ttft`` or ``tpot`` (ms) of a run; ``None`` for a missing run."""
    if summary is None:
        return None
    return {
        "thr": summary.throughput_requests_per_s,
        "ttft": summary.ttft_ms,
        "tpot": summary.tpot_ms,
    }[metric]


def stack_name(stack: str) -> str:
    return f"stack-{stack}"


def crossover_name(mode: str, rtt_ms: float) -> str:
    return f"crossover-{mode}-rtt{rtt_ms:g}"


def table_name(dataset: str, config: str, window: str) -> str:
    return f"table-{dataset}-{config}-{window}"


def routing_name(routing: str, drafts: int) -> str:
    return f"routing-{routing}-{drafts}"


def batching_name(batching: str, drafts: int) -> str:
    return f"batching-{batching}-{drafts}"


def plan_scenarios(plan: DsdPlan) -> dict[str, dict[str, Any]]:
    """Every run of ``plan``: name → scenario dict."""
    s, runs = plan.setup, {}
    for stack, policies in STACKS.items():
        name = stack_name(stack)
        runs[name] = scenario(
            s, name=name, dataset="gsm8k", num_drafts=plan.stack_drafts, rtt_ms=10.0,
            stack=policies,
        )  # fmt: skip
    for rtt in plan.crossover_rtts_ms:
        for mode in ("distributed", "fused"):
            name = crossover_name(mode, rtt)
            runs[name] = scenario(
                s, name=name, dataset="gsm8k", num_drafts=plan.stack_drafts, rtt_ms=rtt,
                stack=STACKS["s2"], mode=mode,
            )  # fmt: skip
    for dataset in plan.datasets:
        for config in plan.table_configs:
            drafts, rtt = TABLE_CONFIGS[config]
            for window in WINDOWS:
                name = table_name(dataset, config, window)
                runs[name] = scenario(
                    s, name=name, dataset=dataset, num_drafts=drafts, rtt_ms=rtt,
                    stack=("jsq", "lab", window),
                )  # fmt: skip
    for drafts in plan.sweep_drafts:
        for routing in ("jsq", "round_robin"):
            name = routing_name(routing, drafts)
            runs[name] = scenario(
                s, name=name, dataset="gsm8k", num_drafts=drafts, rtt_ms=10.0,
                stack=(routing, "fcfs", "static"),
            )  # fmt: skip
        for batching in ("fcfs", "lab"):
            name = batching_name(batching, drafts)
            runs[name] = scenario(
                s, name=name, dataset="gsm8k", num_drafts=drafts, rtt_ms=10.0,
                stack=("jsq", batching, "static"),
            )  # fmt: skip
    return runs


@dataclass(frozen=True, slots=True)
class DsdResults:
    """Everything the claims are computed from: run name → summary."""

    plan: DsdPlan
    runs: dict[str, DsdRunSummary]

    def get(self, name: str) -> DsdRunSummary | None:
        return self.runs.get(name)


def results_dict(res: DsdResults) -> dict[str, Any]:
    """results.json: the setting and every run's summary."""
    return {
        "setup": res.plan.setup.to_dict(),
        "runs": {name: asdict(summary) for name, summary in sorted(res.runs.items())},
    }


def run_dsd(
    plan: DsdPlan, executor: SweepExecutor, scenario_dir: Path, progress: bool
) -> tuple[DsdResults, list[str]]:
    """Run every scenario of ``plan``; write each scenario file it ran."""
    scenarios = plan_scenarios(plan)
    names: Sequence[str] = list(scenarios)
    files = [write_scenario(scenario_dir, name, scenarios[name]) for name in names]
    jobs = [RunJob(scenarios[name]) for name in names]
    with progress_bar(progress) as bar:
        task = bar.add_task("reproduce dsd", total=len(jobs))
        values = run_all(executor, jobs, lambda: bar.advance(task))
    runs = {name: DsdRunSummary.of(m) for name, m in zip(names, values, strict=True)}
    return DsdResults(plan, runs), files
