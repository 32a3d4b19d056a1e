from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.types import PendingVerification, ServerLoad
from edgespec.policies.batching import FcfsBatching, LengthAwareBatching
from edgespec.policies.inputs import UNOBSERVED
from edgespec.policies.interfaces import (
    BatchingPolicy,
    BatchLimits,
    RoutingPolicy,
    WindowDecision,
    WindowObservation,
    WindowPolicy,
)
from edgespec.policies.registry import PolicyConfigError, build_policy
from edgespec.policies.routing import JoinShortestQueueRouting, RandomRouting, RoundRobinRouting
from edgespec.policies.window import DynamicWindow, StaticWindow


def entry(entry_id: int, enq: float, new: int = 5, cached: int = 100) -> PendingVerification:
    return PendingVerification(entry_id, f"s{entry_id}", f"c{entry_id}", enq, 4, new, cached)


LOADS = (ServerLoad(0, 3, 10), ServerLoad(1, 1, 12), ServerLoad(2, 1, 5), ServerLoad(3, 4, 1))


class TestRouting:
    def test_round_robin_cycles(self) -> None:
        policy = RoundRobinRouting()
        rng = np.random.default_rng(0)
        assert [policy.route(LOADS, rng) for _ in range(6)] == [0, 1, 2, 3, 0, 1]

    def test_jsq_picks_shortest_queue_then_fewest_sessions(self) -> None:
        assert JoinShortestQueueRouting().route(LOADS, np.random.default_rng(0)) == 2

    def test_jsq_breaks_exact_ties_at_random(self) -> None:
        loads = (ServerLoad(0, 0, 0), ServerLoad(1, 0, 0))
        picks = {
            JoinShortestQueueRouting().route(loads, np.random.default_rng(s)) for s in range(20)
        }
        assert picks == {0, 1}

    def test_random_is_seeded_and_covers_servers(self) -> None:
        a = [RandomRouting().route(LOADS, np.random.default_rng(5)) for _ in range(3)]
        b = [RandomRouting().route(LOADS, np.random.default_rng(5)) for _ in range(3)]
        assert a == b
        rng = np.random.default_rng(1)
        assert {RandomRouting().route(LOADS, rng) for _ in range(200)} == {0, 1, 2, 3}

    def test_no_servers(self) -> None:
        with pytest.raises(ValueError, match="at least one server"):
            RandomRouting().route((), np.random.default_rng(0))


class TestBatching:
    def test_fcfs_takes_oldest_in_order_up_to_size(self) -> None:
        queue = [entry(1, 3.0), entry(2, 1.0), entry(3, 2.0), entry(4, 0.5)]
        plan = FcfsBatching().select(queue, 4.0, BatchLimits(max_batch_size=3))
        assert plan.entry_ids == (4, 2, 3)

    def test_fcfs_respects_token_budget_but_never_starves_head(self) -> None:
        queue = [entry(1, 0.0, new=50), entry(2, 1.0, new=30), entry(3, 2.0, new=10)]
        plan = FcfsBatching().select(queue, 3.0, BatchLimits(max_batch_tokens=40))
        assert plan.entry_ids == (1,)
        plan = FcfsBatching().select(queue[1:], 3.0, BatchLimits(max_batch_tokens=40))
        assert plan.entry_ids == (2, 3)

    def test_lab_groups_similar_lengths_around_head(self) -> None:
        queue = [
            entry(1, 0.0, cached=100),
            entry(2, 0.1, cached=1000),
            entry(3, 0.2, cached=120),
            entry(4, 0.3, cached=90),
            entry(5, 0.4, cached=400),
        ]
        plan = LengthAwareBatching().select(queue, 1.0, BatchLimits(max_batch_size=3))
        assert plan.entry_ids == (1, 4, 3)

    def test_lab_length_ratio_bound(self) -> None:
        queue = [entry(1, 0.0, cached=100), entry(2, 0.1, cached=1000)]
        plan = LengthAwareBatching(max_length_ratio=2.0).select(queue, 1.0, BatchLimits())
        assert plan.entry_ids == (1,)

    def test_empty_queue(self) -> None:
        assert FcfsBatching().select([], 0.0, BatchLimits()).entry_ids == ()
        assert LengthAwareBatching().select([], 0.0, BatchLimits()).entry_ids == ()


class TestWindow:
    def test_static(self) -> None:
        assert StaticWindow(3).next_window(WindowObservation(7, 0.1)) == WindowDecision(3)
        assert StaticWindow(2, fused=True).next_window(UNOBSERVED) == WindowDecision(2, True)
        with pytest.raises(ValueError):
            StaticWindow(0)

    @pytest.mark.parametrize(
        ("prev", "acc", "expected"),
        [
            (4, None, 4),
            (4, 0.8, 5),
            (4, 0.75, 4),
            (4, 0.2, 3),
            (4, 0.25, 4),
            (8, 0.9, 8),
            (1, 0.0, 1),
        ],
    )
    def test_dynamic_thresholds(self, prev: int, acc: float | None, expected: int) -> None:
        assert DynamicWindow().next_window(WindowObservation(prev, acc)) == WindowDecision(expected)


class TestRegistry:
    def test_builds_each_kind_and_satisfies_protocols(self) -> None:
        assert isinstance(build_policy("routing", "jsq"), RoutingPolicy)
        assert isinstance(
            build_policy("batching", "lab", {"max_length_ratio": 2.0}), BatchingPolicy
        )
        assert isinstance(build_policy("window", "dynamic", {"max_gamma": 6}), WindowPolicy)

    def test_errors_name_the_problem(self) -> None:
        with pytest.raises(PolicyConfigError, match="unknown batching policy 'fifo'"):
            build_policy("batching", "fifo")
        with pytest.raises(PolicyConfigError, match=r"no parameter\(s\) \['gama'\]"):
            build_policy("window", "static", {"gama": 3})
        with pytest.raises(PolicyConfigError, match="gamma must be >= 1"):
            build_policy("window", "static", {"gamma": 0})
