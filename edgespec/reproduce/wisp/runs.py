"""``edgespec reproduce wisp``: WISP's claims W1–W5 (SEED-NOTES §5) against the simulator.

First the late-request rule's sensitivity is run on its own setting (:mod:`runner`; the
rule itself is fixed there, from Algorithm 1's text); then W1/W2
Table 2 capacities per class (Qwen3-32B, Qwen3-14B stand-in) for WISP, centralized and
SLED; W3 Table 3 goodput; W4 Table 1 / Fig. 7 violation curves of WISP (Algorithm 1 as
printed, and its work-conserving reading) and FCFS, mixed classes, and the operating point
where FCFS has Table 1's rate (:mod:`operating`); Fig. 8's violation attribution there
(shown, not judged: the simulated verifier is deterministic). The setting is
:mod:`setup`'s, fixed once. Work runs through a sweep executor (``--workers``): a job is
one capacity search or one run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from edgespec.metrics.attribution import ViolationAttribution, attribute_violations
from edgespec.metrics.summary import summarize
from edgespec.metrics.types import SystemMetrics
from edgespec.reproduce.jobs import run_all, write_scenario
from edgespec.reproduce.wisp.operating import MAX_PROBES, OperatingPoint, find_operating_point
from edgespec.reproduce.wisp.runner import (
    LATE_RULE,
    LATE_RULES,
    LateRule,
    LateSensitivity,
    SimRun,
    late_rule_sensitivity,
    named,
    simulate_rule,
)
from edgespec.reproduce.wisp.setup import CLASSES, MIXED, WispSetup, scenario
from edgespec.reproduce.wisp.unfinished import UnfinishedSensitivity, unfinished_sensitivity
from edgespec.sweeps.capacity import capacity_search, class_violation
from edgespec.sweeps.executor import SweepExecutor
from edgespec.sweeps.progress import progress_bar

CAPACITY_SYSTEMS = ("wisp", "centralized", "sled")
CURVE_SYSTEMS = ("wisp", "wisp-wc", "wisp-np", "fcfs")
GOODPUT_SYSTEMS = ("wisp", "wisp-np", "centralized", "sled")


@dataclass(frozen=True, slots=True)
class Plan:
    """How much to run: the full reproduction or ``--quick`` (CI)."""

    setup: WispSetup
    targets: tuple[str, ...]
    classes: tuple[str, ...]
    capacity_hi: int
    curve_devices: tuple[int, ...]
    goodput_devices: int
    without_predictor: tuple[str, ...]
    """Targets whose capacities are searched for ``wisp-np`` too."""
    sensitivity: tuple[int, float, int]
    """The late-request sensitivity's seed, run length (s) and most devices."""
    operating_probes: int
    """FCFS runs off the grid to find W4's operating point, at most."""

    @staticmethod
    def full() -> Plan:
        curve = tuple(range(40, 401, 20))
        return Plan(
            WispSetup(), ("qwen3-32b", "qwen3-14b"), tuple(CLASSES), 600, curve, 300,
            ("qwen3-32b",), (1, 120.0, 300), MAX_PROBES,
        )  # fmt: skip

    @staticmethod
    def quick() -> Plan:
        setup = replace(WispSetup(), duration_s=60.0, ramp_s=5.0, mean_output_tokens=60)
        return Plan(
            setup, ("qwen3-32b",), ("c2", "c8"), 400, (60, 120, 180), 200, (), (1, 20.0, 100), 1
        )


@dataclass(frozen=True, slots=True)
class CapacityJob:
    setup: WispSetup
    system: str
    target: str
    slo_class: str
    hi: int
    rule: LateRule

    def base(self) -> dict[str, Any]:
        """The scenario bisected over (its device count is the search's variable)."""
        return scenario(
            self.setup, self.system, devices=1, slo_mix={self.slo_class: 1.0}, target=self.target
        )

    def __call__(self) -> int | None:
        result = capacity_search(
            self.base(),
            "auto_topology.devices.0.count",
            SimRun(self.rule),
            epsilon=self.setup.epsilon,
            lo=1,
            hi=self.hi,
            violation=class_violation(self.slo_class),
            progress=False,
        )
        return result.capacity


@dataclass(frozen=True, slots=True)
class RunJob:
    """One run of a scenario dict under the chosen late-request rule."""

    data: dict[str, Any]
    rule: LateRule

    def __call__(self) -> SystemMetrics:
        return SimRun(self.rule)(self.data)


@dataclass(frozen=True, slots=True)
class WispResults:
    """Everything the claims are computed from."""

    plan: Plan
    late: LateSensitivity
    """What the other late-request rules would do (shown, never used to choose)."""
    capacities: dict[tuple[str, str, str], int | None]
    """(system, target, class) → devices."""
    goodput: dict[str, SystemMetrics]
    """System → metrics of its mixed-class run at ``plan.goodput_devices`` (W3)."""
    curves: dict[tuple[str, int], SystemMetrics]
    """(system, devices) → metrics of the mixed-class run (W4)."""
    operating: OperatingPoint | None
    at_operating: dict[str, SystemMetrics]
    """System → metrics at the operating point's N (empty without one)."""
    attribution: ViolationAttribution | None
    unfinished: UnfinishedSensitivity | None = None
    """WISP's capacity with the unfinished requests counted too (shown, never judged)."""
    other_rules: dict[tuple[str, str, str], int | None] = field(default_factory=dict)
    """(late-request rule, target, class) → WISP's capacity under each rule but
    :data:`~.runner.LATE_RULE`: whether the rule decides W1's and W2's verdicts
    (:mod:`.late_decides`)."""
    other_goodput: dict[tuple[str, str], SystemMetrics] = field(default_factory=dict)
    """(late-request rule, system) → W3's run of a WISP system under each rule but
    :data:`~.runner.LATE_RULE`: whether the rule decides W3's verdict."""


def capacity_jobs(plan: Plan, rule: LateRule) -> list[CapacityJob]:
    return [
        CapacityJob(plan.setup, system, target, cls, plan.capacity_hi, rule)
        for target in plan.targets
        for system in CAPACITY_SYSTEMS + (("wisp-np",) if target in plan.without_predictor else ())
        for cls in plan.classes
    ]


def mixed(plan: Plan, system: str, devices: int, record_rounds: bool = False) -> dict[str, Any]:
    """``system``'s mixed-class scenario with ``devices`` devices (Qwen3-32B); its committed
    goodput is counted with or without round records (docs/METRICS.md), which only
    ``record_rounds`` keeps (W5's attribution reads them)."""
    return scenario(plan.setup, system, devices=devices, slo_mix=MIXED, record_rounds=record_rounds)


def other_rule_jobs(plan: Plan) -> list[CapacityJob]:
    """WISP's capacity searches under every late-request rule but the chosen one."""
    return [
        CapacityJob(plan.setup, "wisp", target, cls, plan.capacity_hi, rule)
        for rule in LATE_RULES
        if rule != LATE_RULE
        for target in plan.targets
        for cls in plan.classes
    ]


def curve_jobs(plan: Plan, rule: LateRule) -> list[tuple[str, int, RunJob]]:
    return [
        (system, n, RunJob(mixed(plan, system, n), rule))
        for system in CURVE_SYSTEMS
        for n in plan.curve_devices
    ]


def goodput_jobs(plan: Plan, rule: LateRule) -> list[tuple[str, RunJob]]:
    return [(s, RunJob(mixed(plan, s, plan.goodput_devices), rule)) for s in GOODPUT_SYSTEMS]


def other_goodput_jobs(plan: Plan) -> list[tuple[str, str, RunJob]]:
    """W3's runs of the systems batching with WISP under every late-request rule but the
    chosen one: (rule, system, run)."""
    return [
        (rule, system, job)
        for rule in LATE_RULES
        if rule != LATE_RULE
        for system, job in goodput_jobs(plan, rule)
        if job.data["policies"]["batching"]["name"] == "wisp"
    ]


def at_operating_point(
    plan: Plan, res: WispResults, rule: LateRule, files: list[str], folder: Path
) -> WispResults:
    """Find W4's operating point (FCFS probed off the grid), run the WISP systems there
    (WISP with its records kept, for W5's attribution; without its predictor from the grid
    where N lies on it)."""

    def run(system: str, n: int) -> SystemMetrics:
        found = res.curves.get((system, n))
        if found is not None:
            return found
        data = mixed(plan, system, n)
        files.append(write_scenario(folder, f"operating-{system}-{n}", named(data, rule)))
        return SimRun(rule)(data)

    fcfs = {n: m for (s, n), m in res.curves.items() if s == "fcfs"}
    point = find_operating_point(fcfs, lambda n: run("fcfs", n), plan.operating_probes)
    if point is None:
        return res
    n = point.devices
    data = mixed(plan, "wisp", n, record_rounds=True)
    files.append(write_scenario(folder, f"attribution-wisp-{n}", named(data, rule)))
    kept = simulate_rule(data, rule)
    wisp = summarize(kept.requests, kept.batches, kept.duration_s, kept.num_servers, kept.rounds,
                     kept.unfinished)  # fmt: skip
    runs = {"wisp": wisp, "wisp-wc": run("wisp-wc", n), "wisp-np": run("wisp-np", n)}
    runs["fcfs"] = point.fcfs
    attribution = attribute_violations(kept.rounds)
    return replace(res, operating=point, at_operating=runs, attribution=attribution)


def run_wisp(
    plan: Plan, executor: SweepExecutor, scenario_dir: Path, progress: bool
) -> tuple[WispResults, list[str]]:
    """Run the late-request sensitivity, every job of ``plan`` (capacity searches, curve and
    goodput runs) under :data:`LATE_RULE`, then the operating point and its attribution;
    write each scenario run."""
    seed, seconds, hi = plan.sensitivity
    late = late_rule_sensitivity(plan.setup, seed, seconds, hi)
    late_unfinished = unfinished_sensitivity(
        plan.setup, seed, seconds, hi, late.capacity[LATE_RULE]
    )
    rule = LATE_RULE
    caps, curves, goodput = (
        capacity_jobs(plan, rule),
        curve_jobs(plan, rule),
        goodput_jobs(plan, rule),
    )
    folder = scenario_dir  # the scenario files, and the operating point's
    files = [
        write_scenario(
            folder, f"capacity-{j.system}-{j.target}-{j.slo_class}", named(j.base(), rule)
        )
        for j in caps
    ]
    files += [write_scenario(folder, f"curve-{s}-{n}", named(j.data, rule)) for s, n, j in curves]
    files += [write_scenario(folder, f"goodput-{s}", named(j.data, rule)) for s, j in goodput]
    others, other_goodput = other_rule_jobs(plan), other_goodput_jobs(plan)
    jobs: list[Callable[[], Any]] = [*caps, *(j for *_, j in curves), *(j for _, j in goodput)]
    late_jobs: list[Callable[[], Any]] = [*others, *(j for *_, j in other_goodput)]
    with progress_bar(progress) as bar:
        task = bar.add_task("reproduce wisp", total=len(jobs) + len(late_jobs) + 1)
        values = run_all(executor, [*jobs, *late_jobs], lambda: bar.advance(task))
        values, other_values = values[: len(jobs)], values[len(jobs) :]
        goodput_values = other_values[len(others) :]
        cap_values, rest = values[: len(caps)], values[len(caps) :]
        res = WispResults(
            plan,
            late,
            {(j.system, j.target, j.slo_class): v for j, v in zip(caps, cap_values, strict=True)},
            {s: m for (s, _), m in zip(goodput, rest[len(curves) :], strict=True)},
            {(s, n): m for (s, n, _), m in zip(curves, rest[: len(curves)], strict=True)},
            None,
            {},
            None,
            late_unfinished,
            {(j.rule, j.target, j.slo_class): v
             for j, v in zip(others, other_values[: len(others)], strict=True)},
            {(r, s): m for (r, s, _), m in zip(other_goodput, goodput_values, strict=True)},
        )  # fmt: skip
        res = at_operating_point(plan, res, rule, files, folder)
        bar.advance(task)
    return res, files
