"""``edgespec reproduce dsd``: DSD's claims D2–D7 (SEED-NOTES §5) against the simulator.

D2 Fig. 5 policy stacks (Default → S4); D3 Fig. 6 distributed vs fused over RTT; D4/D5
Table 2 (Static vs Dynamic vs AWC over 600/1,000 drafts × RTT 10/30 ms × three datasets);
D6 Figs. 7–8 JSQ vs round-robin over the number of drafts; D7 Figs. 9–10 FIFO vs LAB. The
setting is :mod:`~edgespec.reproduce.dsd.setup`'s, fixed once for every run (target
batches priced padded: ``DsdSetup.batch_pricing``; D7 also sweeps LAB's length bound,
:data:`LAB_BOUNDS`); every run exists in both
cost modes (``physical``, ``dsdsim_compat``). Every run is one simulator run through a sweep
executor (``--workers``), reduced to a :class:`DsdRunSummary`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

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
from edgespec.reproduce.dsd.summary import DsdRunJob, DsdRunSummary
from edgespec.reproduce.folder import RECORD_KEY
from edgespec.reproduce.jobs import distinct_jobs, run_all, write_scenario
from edgespec.sweeps.executor import SweepExecutor
from edgespec.sweeps.progress import progress_bar

WINDOWS: tuple[str, ...] = ("static", "dynamic", "awc")
CROSSOVER_MODES: tuple[RoundMode, ...] = ("distributed", "cloud_only", "colocated")
VARIANT_MODES: tuple[RoundMode, ...] = ("distributed", "cloud_only")
"""D3 on the named variant fleet (DSD-Sim's TP-1 targets): the paper's two round modes."""
TRANSIENT_CYCLES = 3.0
"""A run is past its start-up transient when it lasts this many closed-loop cycles (think
time + the fitted cell's conversation): the ramp spreads first conversations over one think
time, and the second cycle still carries its phase."""


LAB_BOUNDS: tuple[float | None, ...] = (1.25, 2.0, 3.0, None)
"""The bounds of LAB's length ratio swept beside the setting's 1.5 (D7's note)."""


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
    lab_bounds: tuple[float | None, ...] = LAB_BOUNDS
    """LAB's length bounds swept beside D7's (at its draft counts, in its pricing);
    ``None``: no bound."""

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


def lab_bound_name(bound: float | None, drafts: int) -> str:
    """LAB's run at ``drafts`` with the length bound ``bound`` (``None``: no bound)."""
    return f"batching-lab-bound{'none' if bound is None else f'{bound:g}'}-{drafts}"


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
        for bound in plan.lab_bounds:
            name = lab_bound_name(bound, drafts)
            runs[name] = scenario(
                replace(s, lab_max_length_ratio=bound), name=name, dataset="gsm8k",
                num_drafts=drafts, rtt_ms=10.0, stack=("jsq", "lab", "static"),
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


def results_from_dict(data: dict[str, Any], plan: DsdPlan) -> list[DsdResults]:
    """The inverse of :func:`results_dict`: a results.json read back as ``plan``'s results,
    per cost mode it holds, so that the rows can be rebuilt without running anything (the
    key naming the reproduction, :data:`~edgespec.reproduce.folder.RECORD_KEY`, aside). A
    mode that is none, or whose stored setup is not ``plan``'s in that mode, is refused,
    naming the first field that differs."""
    data = {key: value for key, value in data.items() if key != RECORD_KEY}
    for mode in data:
        if mode not in COST_MODES:
            raise ValueError(f"results for {mode!r}: not a cost mode ({', '.join(COST_MODES)})")
    results = []
    for mode in COST_MODES:
        if mode not in data:
            continue
        mode_plan, stored = plan.in_mode(mode), data[mode]["setup"]
        want = mode_plan.setup.to_dict()
        for key in sorted(want.keys() | stored.keys()):
            if want.get(key) != stored.get(key):
                raise ValueError(
                    f"results for {mode}: setup {key} is {stored.get(key)!r}, the plan's is "
                    f"{want.get(key)!r}: these results are not this plan's"
                )
        runs = {name: DsdRunSummary(**summary) for name, summary in data[mode]["runs"].items()}
        results.append(DsdResults(mode_plan, runs))
    return results


def run_dsd(
    plan: DsdPlan, executor: SweepExecutor, scenario_dir: Path, progress: bool
) -> tuple[list[DsdResults], list[str]]:
    """Run every scenario of ``plan`` in both cost modes, a scenario that several claims
    share once; write each scenario file (``scenarios/<mode>-<name>.yaml``)."""
    plans = [plan.in_mode(mode) for mode in COST_MODES]
    named = [(p, name, data) for p in plans for name, data in plan_scenarios(p).items()]
    files = [
        write_scenario(scenario_dir, f"{p.setup.cost_mode}-{name}", data) for p, name, data in named
    ]
    jobs = [DsdRunJob(data, p.setup.duration_s, p.setup.compat) for p, _, data in named]
    distinct, which = distinct_jobs(jobs, DsdRunJob.key)  # e.g. stack-s4 is table-…-awc
    with progress_bar(progress) as bar:
        task = bar.add_task("reproduce dsd", total=len(distinct))
        ran = run_all(executor, distinct, lambda: bar.advance(task))
    values = [ran[index] for index in which]
    results = []
    for p in plans:
        runs = {
            name: summary for (q, name, _), summary in zip(named, values, strict=True) if q is p
        }
        results.append(DsdResults(p, runs))
    return results, files
