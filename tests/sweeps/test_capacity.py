"""capacity_search against fake runners whose violation rate is a known step function."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from edgespec.config import ConfigError
from edgespec.core.types import RequestRecord
from edgespec.metrics import SystemMetrics, summarize
from edgespec.metrics.types import SloClassStats
from edgespec.metrics.violation_rates import class_violation_rate
from edgespec.sweeps.capacity import capacity_search


def metrics_with_violations(num_violating: int, total: int = 100, cls: str = "c8") -> SystemMetrics:
    """``total`` requests with an 8 tok/s target; the first ``num_violating`` get 4 tok/s."""
    requests = [
        RequestRecord(
            request_id=f"r{i}",
            client_id="d",
            slo_class=cls,
            server_id=0,
            arrival_s=0.0,
            first_token_s=0.5,
            finish_s=2.0 if i < num_violating else 1.0,
            num_prompt_tokens=4,
            num_output_tokens=8,
            num_rounds=2,
            num_drafted=8,
            num_accepted=6,
            slo_tokens_per_s=8.0,
        )
        for i in range(total)
    ]
    return summarize(requests, [], duration_s=10.0, num_servers=1)


class StepRunner:
    """Violation rate (n - 30) / 100 clipped to [0, 1], n = scenario['devices']['count']."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, scenario: dict[str, Any]) -> SystemMetrics:
        self.calls.append(scenario)
        n = scenario["devices"]["count"]
        return metrics_with_violations(min(100, max(0, n - 30)))


BASE = {"devices": {"count": 1, "model": "qwen3-0.6b"}, "seed": 7}


def test_bisection_finds_exact_capacity_and_records_probes() -> None:
    runner = StepRunner()
    result = capacity_search(
        BASE, "devices.count", runner, epsilon=0.05, lo=1, hi=200, progress=False
    )
    assert result.capacity == 35
    assert not result.at_upper_bound
    assert [p.value for p in result.probes] == [1, 200, 100, 50, 25, 37, 31, 34, 35, 36]
    assert [p.feasible for p in result.probes] == [
        True, False, False, False, True, False, True, True, True, False,
    ]  # fmt: skip
    assert [p.violation_rate for p in result.probes][-2:] == [0.05, 0.06]
    assert runner.calls[0] == {"devices": {"count": 1, "model": "qwen3-0.6b"}, "seed": 7}
    assert BASE["devices"] == {"count": 1, "model": "qwen3-0.6b"}
    d = result.to_dict()
    assert (d["capacity"], d["key"], d["epsilon"]) == (35, "devices.count", 0.05)
    assert d["probes"][8]["metrics"]["slo_violation_rate"] == 0.05


@pytest.mark.parametrize(("epsilon", "expected"), [(0.0, 30), (0.2, 50), (1.0, 64)])
def test_capacity_for_several_epsilons(epsilon: float, expected: int) -> None:
    result = capacity_search(
        BASE, "devices.count", StepRunner(), epsilon=epsilon, lo=2, hi=64, progress=False
    )
    assert result.capacity == expected
    assert result.at_upper_bound == (expected == 64)
    assert len(result.probes) <= 2 + 6


def test_infeasible_lower_bound_gives_none() -> None:
    result = capacity_search(
        BASE, "devices.count", StepRunner(), epsilon=0.01, lo=40, hi=80, progress=False
    )
    assert result.capacity is None
    assert [p.value for p in result.probes] == [40]


def test_per_class_violation_function() -> None:
    def runner(scenario: dict[str, Any]) -> SystemMetrics:
        n = scenario["devices"]["count"]
        return metrics_with_violations(10 if n > 12 else 0, cls="gold")

    result = capacity_search(
        BASE,
        "devices.count",
        runner,
        epsilon=0.05,
        lo=1,
        hi=16,
        violation=class_violation_rate("gold"),
        progress=False,
    )
    assert result.capacity == 12
    with pytest.raises(
        KeyError, match="no SLO class 'silver' in these metrics; classes: \\['gold'\\]"
    ):
        capacity_search(
            BASE,
            "devices.count",
            runner,
            epsilon=0.05,
            lo=1,
            hi=4,
            violation=class_violation_rate("silver"),
            progress=False,
        )


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ConfigError, match="config field 'epsilon': must be in \\[0, 1\\], got 1.5"):
        capacity_search(BASE, "devices.count", StepRunner(), epsilon=1.5, lo=1, hi=2)
    with pytest.raises(ConfigError, match="'devices.count': need 0 <= lo <= hi, got lo=5, hi=2"):
        capacity_search(BASE, "devices.count", StepRunner(), epsilon=0.1, lo=5, hi=2)


def test_runner_without_slo_targets_fails_clearly() -> None:
    def runner(scenario: dict[str, Any]) -> SystemMetrics:
        return summarize([], [], duration_s=1.0, num_servers=1)

    with pytest.raises(ValueError, match="none of the 0 completed requests has an SLO target"):
        capacity_search(BASE, "devices.count", runner, epsilon=0.1, lo=1, hi=2, progress=False)


def test_class_violation_counts_a_class_with_no_finished_request_as_violated() -> None:
    from edgespec.sweeps.capacity import class_violation

    metrics = metrics_with_violations(10, cls="gold")
    assert class_violation("gold")(metrics) == 0.1
    assert class_violation("silver")(metrics) == 1.0  # none of its requests finished


def test_the_overall_rate_counts_a_probe_that_finished_nothing_as_violated() -> None:
    """``sim --capacity`` without ``--slo-class`` stopped at an overloaded probe (no request
    finished: the rate undefined) with "give the scenario slo_classes", where the search of
    one class went on; both now take that probe as violated."""
    from edgespec.sweeps.capacity import overall_violation

    running = metrics_with_violations(0, total=0)
    gold = SloClassStats("gold", 8.0, 0, 0, 0, None, num_unfinished_with_target=3)
    nothing = dataclasses.replace(running, slo_classes=(gold,))  # 3 running, none finished
    assert overall_violation()(nothing) == overall_violation(True)(nothing) == 1.0
    assert overall_violation()(metrics_with_violations(10)) == 0.1
    with pytest.raises(ValueError, match="none of the 0 completed requests has an SLO target"):
        overall_violation()(running)  # no target anywhere: still undefined

    def runner(scenario: dict[str, Any]) -> SystemMetrics:  # overloaded past 40: none finish
        n = scenario["devices"]["count"]
        return nothing if n > 40 else metrics_with_violations(min(100, max(0, n - 30)))

    result = capacity_search(BASE, "devices.count", runner, epsilon=0.05, lo=1, hi=3000,
                             violation=overall_violation(), progress=False)  # fmt: skip
    assert result.capacity == 35


def test_a_single_point_range_and_a_zero_lower_bound() -> None:
    runner = StepRunner()
    result = capacity_search(
        BASE, "devices.count", runner, epsilon=0.05, lo=20, hi=20, progress=False
    )
    assert (result.capacity, result.at_upper_bound) == (20, True)
    assert [p.value for p in result.probes] == [20]  # lo is hi: probed once
    result = capacity_search(
        BASE, "devices.count", runner, epsilon=0.05, lo=0, hi=4, progress=False
    )
    assert (result.capacity, result.at_upper_bound) == (4, True)
    assert [p.value for p in result.probes] == [0, 4]
    with pytest.raises(ConfigError, match="need 0 <= lo <= hi, got lo=-1, hi=4"):
        capacity_search(BASE, "devices.count", runner, epsilon=0.05, lo=-1, hi=4, progress=False)
    with pytest.raises(ConfigError, match="'epsilon': must be in \\[0, 1\\], got -0.01"):
        capacity_search(BASE, "devices.count", runner, epsilon=-0.01, lo=1, hi=4, progress=False)


def test_a_probe_without_slo_targets_names_the_key_the_value_and_the_fix() -> None:
    def runner(scenario: dict[str, Any]) -> SystemMetrics:
        return summarize([], [], duration_s=1.0, num_servers=1)

    with pytest.raises(ConfigError) as info:
        capacity_search(BASE, "devices.count", runner, epsilon=0.1, lo=3, hi=5, progress=False)
    assert str(info.value) == (
        "config field 'devices.count': capacity probe at 3: SLO violation rate undefined: "
        "none of the 0 completed requests has an SLO target (a token-speed target of its SLO "
        "class); give the "
        "scenario slo_classes and a duration_s long enough for requests to finish"
    )


@pytest.mark.parametrize(
    ("largest", "capacity", "at_upper", "probed"),
    [
        (-1, None, False, [3]),  # lo infeasible: nothing else is probed
        (20, 10, True, [3, 10]),  # hi feasible
        (6, 6, False, [3, 10, 6, 8, 7]),  # bisected between lo and hi
    ],
)
def test_bisect_capacity_probes_lo_then_hi_then_the_bracket(
    largest: int, capacity: int | None, at_upper: bool, probed: list[int]
) -> None:
    from edgespec.sweeps.capacity import bisect_capacity

    seen: list[int] = []

    def feasible(value: int) -> bool:
        seen.append(value)
        return value <= largest

    assert bisect_capacity(feasible, 3, 10) == (capacity, at_upper)
    assert seen == probed
