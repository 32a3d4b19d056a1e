"""How the WISP reproduction runs one scenario, and the late-request rule it runs under.

:class:`SimRun` turns a scenario dict into metrics that hold the committed goodput too
(every round is counted as it is verified, docs/METRICS.md), with WISP's batching under
the late-request rule :data:`LATE_RULE`.

**Late requests.** Algorithm 1 stalls on a request that cannot meet its deadline even in a
batch of its own (FEASIBLEADD fails on the empty batch; SEED-NOTES §1.4 item 8), and the
paper does not say what WISP does with it. :data:`LATE_RULES` are three answers. Every
claim runs under one, :data:`LATE_RULE`, which Algorithm 1's own text argues for (a late
request is critical, and the critical queue is served first, earliest deadline first); it
was first chosen, in commit 78cf6c22, as the rule giving WISP the most capacity, and the
argument came after (REPORT.md says so). :func:`late_rule_sensitivity` shows what the
other two would do to WISP's capacity on a setting no claim uses (classes mixed and
pooled, another seed, shorter runs): a sensitivity, shown in REPORT.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from edgespec.core.types import (
    BatchPlan,
    PendingVerification,
)
from edgespec.metrics.types import SystemMetrics
from edgespec.metrics.violation_rates import violation_rate
from edgespec.policies.interfaces import BatchLimits
from edgespec.policies.wisp import WispBatching
from edgespec.reproduce.wisp.setup import MIXED, WispSetup, scenario
from edgespec.sim.setup.build import Policies, build_policies
from edgespec.sim.setup.scenario import Scenario, scenario_from_dict
from edgespec.sim.simulator import SimResult, StreamSink, paused_gc, simulate
from edgespec.sweeps.capacity import Violation, capacity_search

LateRule = Literal["first", "utility", "last"]
LATE_RULES: dict[LateRule, str] = {
    "first": "admitted before every other request, most overdue first, its own deadline "
    "no longer binding the batch (edgespec/policies/wisp.py as written)",
    "utility": "stripped of its deadline: it competes by utility ĝ/v̂ with the requests "
    "that still have slack",
    "last": "served only when no request that can still meet its deadline is queued",
}
"""What a late request (t + T̂({i}) > d_i) gets under each rule."""


def is_late(batching: WispBatching, entry: PendingVerification, now_s: float) -> bool:
    """``entry`` cannot meet its deadline even alone (the policy's own test)."""
    deadline = entry.deadline_s
    return deadline is not None and now_s + batching.solo_s(entry) > deadline


@dataclass(frozen=True, slots=True)
class LateRuleBatching:
    """WISP's Algorithm 1 (``inner``) with late requests handled by ``rule``."""

    inner: WispBatching
    rule: LateRule

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        if self.rule == "first":
            return self.inner.select(queue, now_s, limits)
        late = [is_late(self.inner, e, now_s) for e in queue]
        if self.rule == "utility":
            queue = [
                replace(e, deadline_s=None) if x else e for e, x in zip(queue, late, strict=True)
            ]
            return self.inner.select(queue, now_s, limits)
        timely = [e for e, x in zip(queue, late, strict=True) if not x]
        return self.inner.select(timely or queue, now_s, limits)


def policies_for(scenario: Scenario, rule: LateRule) -> Policies | None:
    """The scenario's policies with ``rule`` applied to WISP's batching; ``None`` (the
    scenario's own) where it changes nothing."""
    if rule == "first" or scenario.policies.batching.name != "wisp":
        return None
    policies = build_policies(scenario)
    assert isinstance(policies.batching, WispBatching)
    return replace(policies, batching=LateRuleBatching(policies.batching, rule))


def named(data: dict[str, Any], rule: LateRule) -> dict[str, Any]:
    """``data`` named with the late-request rule where the scenario file cannot say it
    (a WISP system under a rule other than the policy's own)."""
    if rule == "first" or data["policies"]["batching"]["name"] != "wisp":
        return data
    return {**data, "name": f"{data['name']}-late-{rule}"}


def simulate_rule(data: dict[str, Any], rule: LateRule) -> SimResult:
    """The run of ``data`` (records kept) under ``rule``."""
    scenario = scenario_from_dict(data)
    return simulate(scenario, policies=policies_for(scenario, rule))


@dataclass(frozen=True, slots=True)
class SimRun:
    """scenario dict → metrics under ``rule``, records streamed (the committed goodput
    counted with or without round records)."""

    rule: LateRule = "first"

    def __call__(self, data: dict[str, Any]) -> SystemMetrics:
        scenario = scenario_from_dict(data)
        sink = StreamSink()
        with paused_gc():  # a run owns its worker process (or the CLI's)
            run = simulate(scenario, policies=policies_for(scenario, self.rule), sink=sink)
        return sink.acc.finish(run.duration_s, run.num_servers)


LATE_RULE: LateRule = "first"
"""The rule every WISP run of every claim uses (:func:`late_rule_choice` says why)."""


def late_rule_choice() -> tuple[str, str]:
    """The rule and why, for REPORT.md's chosen inputs: the paper's text, and how it was
    first chosen."""
    return (
        "late requests",
        f"rule “{LATE_RULE}”: a request that cannot meet its deadline even alone is "
        f"{LATE_RULES[LATE_RULE]}. Chosen from Algorithm 1's text: such a request is critical "
        "(t ≥ LST_i), and Algorithm 1 serves the critical queue first, earliest deadline "
        "first; only FEASIBLEADD's deadline test, which no batch could pass, is waived for it. "
        "Every WISP run of every claim uses it; the other rules' effect is a sensitivity "
        "(below). It was first chosen (commit 78cf6c22) as the rule giving WISP the most "
        "capacity on that setting; the text's argument, which now carries it, came after.",
    )


@dataclass(frozen=True, slots=True)
class LateSensitivity:
    """WISP's capacity under each late-request rule on a setting no claim uses (Eq. 20,
    every class): shown beside the chosen rule, never used to choose it."""

    seed: int
    duration_s: float
    epsilon: float
    capacity: dict[LateRule, int | None]
    """Rule → the most devices of mixed classes with at most ``epsilon`` of all finished
    requests below their class's speed (``None``: not even one device)."""

    def line(self) -> str:
        """The sensitivity, for REPORT.md's *Sensitivities*."""
        caps = ", ".join(f"{r} {c if c is not None else 0}" for r, c in self.capacity.items())
        return (
            f"**late-request rule** (chosen: “{LATE_RULE}”): WISP's capacity (Eq. 20, ε = "
            f"{100 * self.epsilon:g}% over all classes pooled) with devices of mixed classes, "
            f"seed {self.seed}, {self.duration_s:g} s runs, under each rule: {caps} devices."
        )


def pooled_capacity(
    setup: WispSetup,
    seed: int,
    duration_s: float,
    hi: int,
    rule: LateRule,
    violation: Violation = violation_rate,
) -> int | None:
    """WISP's capacity (devices 1…``hi`` of mixed classes, every class pooled) under
    ``rule``, on ``setup`` with ``seed`` and runs of ``duration_s``: the sensitivities'
    setting, no claim's."""
    calibration = replace(setup, seed=seed, duration_s=duration_s)
    base = scenario(calibration, "wisp", devices=1, slo_mix=MIXED)
    return capacity_search(
        base,
        "auto_topology.devices.0.count",
        SimRun(rule),
        epsilon=setup.epsilon,
        lo=1,
        hi=hi,
        violation=violation,
        progress=False,
    ).capacity


def late_rule_sensitivity(
    setup: WispSetup, seed: int, duration_s: float, hi: int
) -> LateSensitivity:
    """WISP's pooled capacity (devices 1…``hi``) under each rule, on ``setup`` with
    ``seed`` and runs of ``duration_s``."""
    capacity = {rule: pooled_capacity(setup, seed, duration_s, hi, rule) for rule in LATE_RULES}
    return LateSensitivity(seed, duration_s, setup.epsilon, capacity)
