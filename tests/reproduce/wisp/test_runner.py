"""The WISP reproduction's runner: the three late-request rules on a hand-built queue, the
one rule every claim runs under (never the sensitivity's best), and a run's two goodputs."""

from __future__ import annotations

from edgespec.core.types import PendingVerification
from edgespec.policies.estimator import WispCoefficients
from edgespec.policies.interfaces import BatchLimits
from edgespec.policies.wisp import WispBatching
from edgespec.reproduce.wisp.results_file import results_dict
from edgespec.reproduce.wisp.runner import (
    LATE_RULE,
    LATE_RULES,
    LateRuleBatching,
    LateSensitivity,
    SimRun,
    late_rule_choice,
    policies_for,
)
from edgespec.reproduce.wisp.runs import Plan, WispResults, mixed
from edgespec.sim.setup.scenario import scenario_from_dict

# T̂ = 1 ms per new token + 10 ms: 14 ms for any entry of 4 new tokens
WISP = WispBatching(WispCoefficients(0.001, 0.0, 0.0, 0.01), guard_s=0.005)


def _entry(entry_id: int, deadline_s: float, expected: float) -> PendingVerification:
    return PendingVerification(
        entry_id, f"s{entry_id}", "d", 0.1 * entry_id, 4, 4, 100, "c", deadline_s, expected
    )


LATE = _entry(0, 1.010, 1.0)  # 1.0 + 14 ms > 1.010: late even alone
SLACK = _entry(1, 1.5, 2.0)  # utility 2 / 4 ms = 500
MORE = _entry(2, 1.6, 3.0)  # utility 750


def _plan(rule: str, queue: list[PendingVerification]) -> tuple[int, ...]:
    policy = LateRuleBatching(WISP, rule)  # type: ignore[arg-type]
    return policy.select(queue, 1.0, BatchLimits()).entry_ids


def test_each_late_rule_places_the_late_request() -> None:
    queue = [LATE, SLACK, MORE]
    assert _plan("first", queue) == (0, 2, 1) == WISP.select(queue, 1.0, BatchLimits()).entry_ids
    assert _plan("utility", queue) == (2, 1, 0)  # its utility 1 / 4 ms = 250 is the lowest
    assert _plan("last", queue) == (2, 1)  # waits while a timely request is queued
    assert _plan("last", [LATE]) == (0,)  # and is served when none is
    assert list(LATE_RULES) == ["first", "utility", "last"]


def test_the_rule_is_algorithm_1s_never_the_sensitivitys_best() -> None:
    # "utility" serves the most devices here; every claim still runs under "first"
    late = LateSensitivity(1, 120.0, 0.05, {"first": 40, "utility": 52, "last": 35})
    res = WispResults(Plan.quick(), late, {}, {}, {}, None, {}, None)
    assert LATE_RULE == "first"
    assert results_dict(res)["late_rule"] == {
        "rule": "first",
        "sensitivity_capacity": {"first": 40, "utility": 52, "last": 35},
    }
    assert late.line() == (
        "**late-request rule** (chosen: “first”): WISP's capacity (Eq. 20, ε = 5% over all "
        "classes pooled) with devices of mixed classes, seed 1, 120 s runs, under each rule: "
        "first 40, utility 52, last 35 devices."
    )
    name, text = late_rule_choice()
    assert name == "late requests" and text.startswith("rule “first”: a request that cannot")
    assert "Chosen from Algorithm 1's text: such a request is critical (t ≥ LST_i)" in text


def test_a_run_counts_committed_goodput_with_or_without_round_records() -> None:
    data = mixed(Plan.quick(), "wisp", 6)
    data["duration_s"] = 20.0
    m = SimRun("first")(data)
    assert m.committed_goodput_tokens_per_s is not None and m.num_committed_tokens is not None
    # requests still running at the end count in the committed goodput only
    assert m.num_committed_tokens > m.num_output_tokens > 0
    assert m.committed_goodput_tokens_per_s == m.num_committed_tokens / 20.0
    data["record_rounds"] = False  # was None: the simulator counts it without them too
    assert SimRun("first")(data).num_committed_tokens == m.num_committed_tokens


def test_the_rule_wraps_wisp_batching_only() -> None:
    wisp = scenario_from_dict(mixed(Plan.quick(), "wisp", 2))
    assert policies_for(wisp, "first") is None  # the policy's own rule: no wrapper
    wrapped = policies_for(wisp, "utility")
    assert wrapped is not None and isinstance(wrapped.batching, LateRuleBatching)
    assert wrapped.batching.rule == "utility"
    assert policies_for(scenario_from_dict(mixed(Plan.quick(), "fcfs", 2)), "last") is None
