"""``edgespec reproduce dsd``: DSD's claims D2–D7 (SEED-NOTES §5) against the simulator.

D2 Fig. 5 policy stacks (Default → S4); D3 Fig. 6 distributed vs fused over RTT; D4/D5
Table 2 (Static vs Dynamic vs AWC over 600/1,000 drafts × RTT 10/30 ms × three datasets);
D6 Figs. 7–8 JSQ vs round-robin over the number of drafts; D7 Figs. 9–10 FIFO vs LAB. The
setting is :mod:`~edgespec.reproduce.dsd.setup`'s, fixed once; every run exists in both
cost modes (``physical``, ``dsdsim_compat``). Every run is one simulator run through a sweep
executor (``--workers``), reduced to a :class:`DsdRunSummary`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from edgespec.core.types import RoundRecord
from edgespec.metrics.types import SystemMetrics
from edgespec.reproduce.dsd.load import FIT_CELL, cell_conversation_s
from edgespec.reproduce.dsd.paper import TABLE_CONFIGS
from edgespec.reproduce.dsd.setup import (
    COST_MODES,
    DATASETS,
    STACKS,
    CostMode,
    DsdSetup,
    RoundMode,
    scenario,
)
from edgespec.reproduce.jobs import run_all, write_scenario
from edgespec.sim.simulator import StreamSink
from edgespec.sweeps.executor import SweepExecutor
from edgespec.sweeps.grid import progress_bar

WINDOWS: tuple[str, ...] = ("static", "dynamic", "awc")
CROSSOVER_MODES: tuple[RoundMode, ...] = ("distributed", "cloud_only", "colocated")
VARIANT_MODES: tuple[RoundMode, ...] = ("distributed", "cloud_only")
"""D3 on the named variant fleet (DSD-Sim's TP-1 targets): the paper's two round modes."""
TRANSIENT_CYCLES = 3.0
"""A run is past its start-up transient when it lasts this many closed-loop cycles (think
time + the fitted cell's conversation): the ramp spreads first conversations over one think
time, and the second cycle still carries its phase."""


@dataclass(frozen=True, slots=True)
class DsdPlan:
    """How much to run: the full reproduction or ``--quick`` (CI)."""

    setup: DsdSetup
    datasets: tuple[str, ...]
    table_configs: tuple[str, ...]
    crossover_rtts_ms: tuple[float, ...]
    sweep_drafts: tuple[int, ...]
    variant_rtts_ms: tuple[float, ...] = ()
    """D3's RTTs on the named variant fleet (DSD-Sim's TP-1 targets)."""
    stack_drafts: int = 600

    @staticmethod
    def full() -> DsdPlan:
        return DsdPlan(
            DsdSetup(),
            DATASETS,
            tuple(TABLE_CONFIGS),
            (5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 100.0, 120.0),
            (400, 600, 800, 1000, 1200, 1600, 2000),
            (5.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 120.0),
        )

    @staticmethod
    def quick() -> DsdPlan:
        return DsdPlan(
            replace(DsdSetup(), duration_s=40.0, fleet_share=0.25),
            ("gsm8k",),
            ("C1",),
            (10.0, 60.0, 120.0),
            (400, 1200),
            (10.0, 120.0),
        )

    def in_mode(self, cost_mode: CostMode) -> DsdPlan:
        return replace(self, setup=replace(self.setup, cost_mode=cost_mode))

    @property
    def transient_s(self) -> float:
        """How long a run must last to be past its start-up transient
        (:data:`TRANSIENT_CYCLES` closed-loop cycles at the fitted cell)."""
        return TRANSIENT_CYCLES * (self.setup.think_mean_s + cell_conversation_s(*FIT_CELL))

    @property
    def past_transient(self) -> bool:
        return self.setup.duration_s >= self.transient_s


@dataclass(frozen=True, slots=True)
class DsdRunSummary:
    """What the claims read of one run. ``ttft_ms`` is DSD-Sim's TTFT, from when the
    draft device takes the request up (``SystemMetrics.service_ttft``); ``tpot_ms`` the
    cost mode's TPOT: edgespec's per-request mean (physical) or DSD-Sim's, Σ round time /
    Σ accepted tokens over the rounds that accepted something (compat); throughput over
    the horizon (compat: the drain's completions included)."""

    throughput_requests_per_s: float
    ttft_ms: float | None
    tpot_ms: float | None
    num_requests: int
    ttft_from_arrival_ms: float | None = None
    request_tpot_ms: float | None = None
    """edgespec's per-request mean TPOT, in both modes."""


class DsdSimTpot(StreamSink):
    """The metrics, streamed, plus DSD-Sim's TPOT from the round records (src/sim.py: each
    accepted token a sample of its round's time / its accepted tokens): the rounds'
    time and tokens summed over the rounds that accepted something; a round that drafted
    nothing (cloud-only) counts its one token, and a fused round's time leaves out its
    downlink (DSD-Sim's fused rounds send nothing back)."""

    def __init__(self) -> None:
        super().__init__()
        self.round_time_s = 0.0
        self.num_tokens = 0

    def round(self, record: RoundRecord) -> None:
        super().round(record)
        tokens = record.num_accepted if record.num_drafted else record.num_committed
        if tokens > 0:
            down = record.downlink_s if record.fused else 0.0
            self.round_time_s += record.end_s - record.start_s - down
            self.num_tokens += tokens

    @property
    def tpot_s(self) -> float | None:
        return self.round_time_s / self.num_tokens if self.num_tokens else None


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


@dataclass(frozen=True, slots=True)
class DsdRunJob:
    """One run of a scenario dict, reduced to its summary over ``horizon_s`` (module
    level: process pools pickle it)."""

    data: dict[str, Any]
    horizon_s: float
    compat: bool

    def __call__(self) -> DsdRunSummary:
        from edgespec.sim.setup.scenario import scenario_from_dict
        from edgespec.sim.simulator import paused_gc, simulate

        sink = DsdSimTpot()
        with paused_gc():
            result = simulate(scenario_from_dict(self.data), sink=sink, keep_records=False)
        metrics = sink.acc.finish(result.duration_s, result.num_servers)
        return summarise(metrics, self.horizon_s, sink.tpot_s if self.compat else None)


def summarise(
    metrics: SystemMetrics, horizon_s: float, dsdsim_tpot_s: float | None
) -> DsdRunSummary:
    """A run's summary; ``dsdsim_tpot_s``: DSD-Sim's TPOT (compat), else edgespec's."""
    request_tpot = None if metrics.tpot is None else metrics.tpot.mean_s
    return DsdRunSummary(
        metrics.num_requests / horizon_s,
        None if metrics.service_ttft is None else metrics.service_ttft.mean_s * 1e3,
        _ms(dsdsim_tpot_s if dsdsim_tpot_s is not None else request_tpot),
        metrics.num_requests,
        None if metrics.ttft is None else metrics.ttft.mean_s * 1e3,
        _ms(request_tpot),
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


def crossover_name(mode: str, rtt_ms: float, variant: bool = False) -> str:
    """D3's run of ``mode`` at ``rtt_ms``; ``variant``: on DSD-Sim's TP-1 targets."""
    return f"crossover{'-tp1' if variant else ''}-{mode}-rtt{rtt_ms:g}"


def table_name(dataset: str, config: str, window: str) -> str:
    return f"table-{dataset}-{config}-{window}"


def routing_name(routing: str, drafts: int) -> str:
    return f"routing-{routing}-{drafts}"


def batching_name(batching: str, drafts: int) -> str:
    return f"batching-{batching}-{drafts}"


def plan_scenarios(plan: DsdPlan) -> dict[str, dict[str, Any]]:
    """Every run of ``plan`` in its setup's cost mode: name → scenario dict."""
    s, runs = plan.setup, {}
    for stack, policies in STACKS.items():
        name = stack_name(stack)
        runs[name] = scenario(
            s, name=name, dataset="gsm8k", num_drafts=plan.stack_drafts, rtt_ms=10.0,
            stack=policies,
        )  # fmt: skip
    for rtt in plan.crossover_rtts_ms:
        for mode in CROSSOVER_MODES:
            name = crossover_name(mode, rtt)
            runs[name] = scenario(
                s, name=name, dataset="gsm8k", num_drafts=plan.stack_drafts, rtt_ms=rtt,
                stack=STACKS["s2"], rounds=mode,
            )  # fmt: skip
    tp1 = replace(s, fleet="dsdsim_tp1")
    for rtt in plan.variant_rtts_ms:
        for mode in VARIANT_MODES:
            name = crossover_name(mode, rtt, variant=True)
            runs[name] = scenario(
                tp1, name=name, dataset="gsm8k", num_drafts=plan.stack_drafts, rtt_ms=rtt,
                stack=STACKS["s2"], rounds=mode,
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
    """Everything one cost mode's claims are computed from: run name → summary."""

    plan: DsdPlan
    runs: dict[str, DsdRunSummary]

    def get(self, name: str) -> DsdRunSummary | None:
        return self.runs.get(name)

    @property
    def cost_mode(self) -> CostMode:
        return self.plan.setup.cost_mode


def results_dict(results: Sequence[DsdResults]) -> dict[str, Any]:
    """results.json: per cost mode, the setting and every run's summary."""
    return {
        res.cost_mode: {
            "setup": res.plan.setup.to_dict(),
            "runs": {name: asdict(summary) for name, summary in sorted(res.runs.items())},
        }
        for res in results
    }


def run_dsd(
    plan: DsdPlan, executor: SweepExecutor, scenario_dir: Path, progress: bool
) -> tuple[list[DsdResults], list[str]]:
    """Run every scenario of ``plan`` in both cost modes; write each scenario file
    (``scenarios/<mode>-<name>.yaml``)."""
    plans = [plan.in_mode(mode) for mode in COST_MODES]
    named = [(p, name, data) for p in plans for name, data in plan_scenarios(p).items()]
    files = [
        write_scenario(scenario_dir, f"{p.setup.cost_mode}-{name}", data) for p, name, data in named
    ]
    jobs = [DsdRunJob(data, p.setup.duration_s, p.setup.compat) for p, _, data in named]
    with progress_bar(progress) as bar:
        task = bar.add_task("reproduce dsd", total=len(jobs))
        values = run_all(executor, jobs, lambda: bar.advance(task))
    results = []
    for p in plans:
        runs = {
            name: summary for (q, name, _), summary in zip(named, values, strict=True) if q is p
        }
        results.append(DsdResults(p, runs))
    return results, files
