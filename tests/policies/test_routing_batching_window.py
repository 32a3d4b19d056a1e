from __future__ import annotations

import re
from typing import Any

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


GAMMAS = "need 1 <= min_gamma <= initial_gamma <= max_gamma <= 256"
THRESHOLDS = "need 0 <= lower_below <= raise_above <= 1"
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

    @pytest.mark.parametrize(
        "policy", [RandomRouting(), RoundRobinRouting(), JoinShortestQueueRouting()]
    )
    def test_no_servers(self, policy: RoutingPolicy) -> None:
        with pytest.raises(ValueError, match="^routing needs at least one server$"):
            policy.route((), np.random.default_rng(0))


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

    def test_limits_are_inclusive_and_context_counts_new_tokens(self) -> None:
        queue = [entry(1, 0.0, new=5, cached=100), entry(2, 1.0, new=5, cached=90)]
        # contexts 105 + 95 = 200 (cached + new) and 5 + 5 = 10 new tokens
        fcfs = FcfsBatching()
        for limits in (BatchLimits(max_context_tokens=200), BatchLimits(max_batch_tokens=10)):
            assert fcfs.select(queue, 2.0, limits).entry_ids == (1, 2)
        assert fcfs.select(queue, 2.0, BatchLimits(max_context_tokens=199)).entry_ids == (1,)

    def test_fcfs_skips_an_entry_that_does_not_fit_and_takes_later_ones(self) -> None:
        queue = [entry(1, 0.0, new=10), entry(2, 1.0, new=40), entry(3, 2.0, new=20)]
        plan = FcfsBatching().select(queue, 3.0, BatchLimits(max_batch_tokens=40))
        assert plan.entry_ids == (1, 3)

    def test_arrival_ties_go_by_entry_id(self) -> None:
        queue = [entry(2, 1.0), entry(1, 1.0), entry(3, 0.5)]
        assert FcfsBatching().select(queue, 2.0, BatchLimits()).entry_ids == (3, 1, 2)

    def test_lab_head_is_the_oldest_entry_wherever_it_sits(self) -> None:
        queue = [
            entry(1, 0.5, cached=500),
            entry(2, 0.1, cached=100),
            entry(3, 0.2, cached=480),
            entry(4, 0.3, cached=110),
        ]
        plan = LengthAwareBatching().select(queue, 1.0, BatchLimits(max_batch_size=2))
        assert plan.entry_ids == (2, 4)

    def test_lab_closeness_is_absolute_and_its_ties_go_to_the_oldest(self) -> None:
        head, limits = entry(1, 0.0, cached=100), BatchLimits(max_batch_size=2)
        # 90 tokens shorter is farther than 20 tokens longer
        queue = [head, entry(2, 0.1, cached=10), entry(3, 0.2, cached=120)]
        assert LengthAwareBatching().select(queue, 1.0, limits).entry_ids == (1, 3)
        # 10 longer and 10 shorter tie: the older one (5) goes first, whatever its id
        queue = [head, entry(4, 0.5, cached=110), entry(5, 0.4, cached=90)]
        assert LengthAwareBatching().select(queue, 1.0, limits).entry_ids == (1, 5)

    def test_lab_length_ratio_bound_is_inclusive(self) -> None:
        policy = LengthAwareBatching(max_length_ratio=2.0)
        head = entry(1, 0.0, cached=100)  # context 105
        queue = [head, entry(2, 0.1, cached=205), entry(3, 0.2, cached=206)]  # 210, 211
        assert policy.select(queue, 1.0, BatchLimits()).entry_ids == (1, 2)

    def test_empty_queue(self) -> None:
        assert FcfsBatching().select([], 0.0, BatchLimits()).entry_ids == ()
        assert LengthAwareBatching().select([], 0.0, BatchLimits()).entry_ids == ()


class TestWindow:
    def test_static(self) -> None:
        assert StaticWindow(3).next_window(WindowObservation(7, 0.1)) == WindowDecision(3)
        assert StaticWindow(2, fused=True).next_window(UNOBSERVED) == WindowDecision(2, True)
        assert StaticWindow(1).next_window(UNOBSERVED) == WindowDecision(1)
        with pytest.raises(ValueError, match="^gamma must be >= 1, got 0$"):
            StaticWindow(0)

    @pytest.mark.parametrize(
        ("prev", "acc", "expected"),
        [
            (4, None, 4),
            (0, None, 4),  # before round 1: the initial γ, not the previous answer
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

    def test_dynamic_clamps_to_its_own_min_gamma(self) -> None:
        policy = DynamicWindow(initial_gamma=3, min_gamma=3)
        assert policy.next_window(WindowObservation(3, 0.0)) == WindowDecision(3)

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"min_gamma": 0, "initial_gamma": 1}, f"{GAMMAS}, got 0, 1, 8"),
            ({"min_gamma": 2, "initial_gamma": 1}, f"{GAMMAS}, got 2, 1, 8"),
            ({"initial_gamma": 9}, f"{GAMMAS}, got 1, 9, 8"),
            ({"max_gamma": 10**7}, f"{GAMMAS}, got 1, 4, 10000000"),  # a decision per γ
            ({"lower_below": 0.8, "raise_above": 0.5}, f"{THRESHOLDS}, got 0.8, 0.5"),
            ({"raise_above": 1.5}, f"{THRESHOLDS}, got 0.25, 1.5"),
            ({"lower_below": -0.1}, f"{THRESHOLDS}, got -0.1, 0.75"),
        ],
    )
    def test_dynamic_refuses_bad_settings(self, params: dict[str, Any], message: str) -> None:
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            DynamicWindow(**params)


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
