"""``edgespec reproduce wisp``: WISP's claims W1–W5 (SEED-NOTES §5) against the simulator.

W1/W2 Table 2 capacities per class (Qwen3-32B, Qwen3-14B stand-in) for WISP, centralized
and SLED; W3 Table 3 goodput; W4 Table 1 / Fig. 7 violation curves, WISP vs FCFS, mixed
classes; W5 Fig. 8 violation attribution. The setting is :mod:`wisp_setup`'s, fixed once.
Work runs through a sweep executor (``--workers``): a job is one capacity search or one run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edgespec.metrics.attribution import ViolationAttribution, attribute_violations
from edgespec.metrics.types import SystemMetrics
from edgespec.reproduce.jobs import RunJob, run_all, write_scenario
from edgespec.reproduce.wisp.setup import CLASSES, WispSetup, scenario
from edgespec.sim.commands.run import run_scenario_dict
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from edgespec.sweeps.capacity import capacity_search, class_violation
from edgespec.sweeps.executor import SweepExecutor
from edgespec.sweeps.grid import progress_bar

MIXED = {name: 1.0 for name in CLASSES}


@dataclass(frozen=True, slots=True)
class Plan:
    """How much to run: the full reproduction or ``--quick`` (CI)."""

    setup: WispSetup
    targets: tuple[str, ...]
    classes: tuple[str, ...]
    capacity_hi: int
    curve_devices: tuple[int, ...]
    goodput_devices: int

    @staticmethod
    def full() -> Plan:
        return Plan(
            WispSetup(),
            ("qwen3-32b", "qwen3-14b"),
            tuple(CLASSES),
            600,
            tuple(range(40, 401, 20)),
            300,
        )

    @staticmethod
    def quick() -> Plan:
        setup = replace(WispSetup(), duration_s=60.0, ramp_s=5.0, mean_output_tokens=60)
        return Plan(setup, ("qwen3-32b",), ("c2", "c8"), 400, (60, 120, 180), 200)


@dataclass(frozen=True, slots=True)
class CapacityJob:
    setup: WispSetup
    system: str
    target: str
    slo_class: str
    hi: int

    def base(self) -> dict[str, Any]:
        """The scenario bisected over (its device count is the search's variable)."""
        return scenario(
            self.setup, self.system, devices=1, slo_mix={self.slo_class: 1.0}, target=self.target
        )

    def __call__(self) -> int | None:
        result = capacity_search(
            self.base(),
            "auto_topology.devices.0.count",
            run_scenario_dict,
            epsilon=self.setup.epsilon,
            lo=1,
            hi=self.hi,
            violation=class_violation(self.slo_class),
            progress=False,
        )
        return result.capacity


@dataclass(frozen=True, slots=True)
class AttributionJob:
    data: dict[str, Any]

    def __call__(self) -> ViolationAttribution:
        result = simulate(scenario_from_dict(self.data))
        return attribute_violations(result.rounds)


@dataclass(frozen=True, slots=True)
class WispResults:
    """Everything the claims are computed from."""

    plan: Plan
    capacities: dict[tuple[str, str, str], int | None]
    """(system, target, class) → devices."""
    goodput: dict[str, float]
    curves: dict[tuple[str, int], SystemMetrics]
    """(system, devices) → metrics of the mixed-class run (W4)."""
    attribution: ViolationAttribution | None
    attribution_devices: int | None


def capacity_jobs(plan: Plan) -> list[CapacityJob]:
    return [
        CapacityJob(plan.setup, system, target, cls, plan.capacity_hi)
        for target in plan.targets
        for system in ("wisp", "centralized", "sled")
        for cls in plan.classes
    ]


def curve_jobs(plan: Plan) -> list[tuple[str, int, RunJob]]:
    return [
        (system, n, RunJob(scenario(plan.setup, system, devices=n, slo_mix=MIXED)))
        for system in ("wisp", "fcfs")
        for n in plan.curve_devices
    ]


def goodput_jobs(plan: Plan) -> list[tuple[str, RunJob]]:
    n = plan.goodput_devices
    return [
        (system, RunJob(scenario(plan.setup, system, devices=n, slo_mix=MIXED)))
        for system in ("wisp", "centralized", "sled")
    ]


def knee_devices(
    curves: dict[tuple[str, int], SystemMetrics], system: str, cls: str, level: float
) -> int | None:
    """The fewest devices at which ``system``'s violation rate in ``cls`` reaches ``level``."""
    points = sorted(n for s, n in curves if s == system)
    for n in points:
        if class_violation(cls)(curves[(system, n)]) >= level:
            return n
    return None


FCFS_OPERATING_LEVEL = 0.3645
"""Table 1: FCFS's violation rate at 4 tok/s. W4 compares WISP and FCFS at the fewest
devices where our FCFS reaches it."""


def operating_point(curves: dict[tuple[str, int], SystemMetrics]) -> int | None:
    """W4's N: the fewest devices at which FCFS's 4 tok/s class reaches Table 1's rate."""
    return knee_devices(curves, "fcfs", "c4", FCFS_OPERATING_LEVEL)


def results_dict(res: WispResults) -> dict[str, Any]:
    """results.json: every number the claims use."""
    return {
        "setup": res.plan.setup.to_dict(),
        "capacities": [
            {"system": s, "target": t, "class": c, "devices": v}
            for (s, t, c), v in sorted(res.capacities.items())
        ],
        "goodput_tokens_per_s": res.goodput,
        "curves": [
            {
                "system": s,
                "devices": n,
                "violation": {c: class_violation(c)(m) for c in CLASSES},
                "goodput_tokens_per_s": m.goodput_tokens_per_s,
            }
            for (s, n), m in sorted(res.curves.items())
        ],
        "attribution": None
        if res.attribution is None
        else {
            "devices": res.attribution_devices,
            "rounds_with_deadline": res.attribution.num_rounds_with_deadline,
            "violated": res.attribution.num_violated,
            "compute_dominant": res.attribution.num_compute_dominant,
        },
    }


def run_wisp(
    plan: Plan, executor: SweepExecutor, scenario_dir: Path, progress: bool
) -> tuple[WispResults, list[str]]:
    """Run every job of ``plan`` (capacity searches, curve and goodput runs, then the
    attribution run at the W4 operating point); write each scenario it ran."""
    caps = capacity_jobs(plan)
    curves = curve_jobs(plan)
    goodput = goodput_jobs(plan)
    files = [
        write_scenario(scenario_dir, f"capacity-{j.system}-{j.target}-{j.slo_class}", j.base())
        for j in caps
    ]
    files += [write_scenario(scenario_dir, f"curve-{s}-{n}", j.data) for s, n, j in curves]
    files += [write_scenario(scenario_dir, f"goodput-{s}", j.data) for s, j in goodput]
    jobs: list[Callable[[], Any]] = [*caps, *(j for *_, j in curves), *(j for _, j in goodput)]
    with progress_bar(progress) as bar:
        task = bar.add_task("reproduce wisp", total=len(jobs) + 1)
        values = run_all(executor, jobs, lambda: bar.advance(task))
        cap_values, rest = values[: len(caps)], values[len(caps) :]
        capacities = {
            (j.system, j.target, j.slo_class): v for j, v in zip(caps, cap_values, strict=True)
        }
        curve_values, goodput_metrics = rest[: len(curves)], rest[len(curves) :]
        curve_metrics = {(s, n): m for (s, n, _), m in zip(curves, curve_values, strict=True)}
        goodput_values = {
            s: m.goodput_tokens_per_s for (s, _), m in zip(goodput, goodput_metrics, strict=True)
        }
        partial = WispResults(plan, capacities, goodput_values, curve_metrics, None, None)
        n_star = operating_point(curve_metrics) or plan.curve_devices[-1]
        data = scenario(plan.setup, "wisp", devices=n_star, slo_mix=MIXED, record_rounds=True)
        files.append(write_scenario(scenario_dir, f"attribution-wisp-{n_star}", data))
        attribution = AttributionJob(data)()
        bar.advance(task)
    return replace(partial, attribution=attribution, attribution_devices=n_star), files
