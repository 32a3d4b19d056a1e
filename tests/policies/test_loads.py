"""LoadView (policies/loads.py): a Sequence of ServerLoad kept up to date in place, whose
least-loaded index agrees with a scan of the list after any sequence of updates."""

from __future__ import annotations

import re

import numpy as np
import pytest

from edgespec.core.types import ServerLoad
from edgespec.policies.contracts import PolicyContractError, check_route
from edgespec.policies.loads import LoadView
from edgespec.policies.routing import JoinShortestQueueRouting, RandomRouting, RoundRobinRouting


def scan_least(loads: list[ServerLoad]) -> list[ServerLoad]:
    best = min((x.queue_depth, x.num_active_sessions) for x in loads)
    return [x for x in loads if (x.queue_depth, x.num_active_sessions) == best]


def test_view_reads_like_its_list() -> None:
    loads = [ServerLoad(7, 1, 2), ServerLoad(3, 0, 5, True), ServerLoad(9, 0, 5)]
    view = LoadView(loads)
    assert len(view) == 3 and list(view) == loads and view[1] == loads[1]
    assert view[1:] == loads[1:]
    assert view.position(9) == 2 and view.position(4) is None
    assert list(view.least_loaded()) == [loads[1], loads[2]]
    assert view.least_loaded_ids() == [3, 9] and view.num_least_loaded() == 2
    assert view.least_loaded()[1:] == [loads[2]]
    view.update(0, 0, 1, True)
    assert view[0] == ServerLoad(7, 0, 1, True)
    assert list(view.least_loaded()) == [ServerLoad(7, 0, 1, True)]
    with pytest.raises(ValueError, match="server 3 appears twice in the loads"):
        LoadView([ServerLoad(3, 0, 0), ServerLoad(3, 1, 0)])
    assert len(LoadView([]).least_loaded()) == 0


def test_load_ranges() -> None:
    # any active count below 2**32 orders after the queue depth
    view = LoadView([ServerLoad(0, 1, 0), ServerLoad(1, 0, 2**32 - 1)])
    assert view.least_loaded_ids() == [1]
    for load in (ServerLoad(2, -1, 0), ServerLoad(2, 0, -1), ServerLoad(2, 0, 2**32)):
        with pytest.raises(ValueError, match=re.escape(f"server 2: load out of range: {load}")):
            LoadView([load])


def test_index_agrees_with_a_scan_after_random_updates() -> None:
    rng = np.random.default_rng(4)
    loads = [ServerLoad(i, 0, 0) for i in range(40)]
    view = LoadView(loads)
    for _ in range(3000):
        i = int(rng.integers(40))
        loads[i] = ServerLoad(i, int(rng.integers(4)), int(rng.integers(6)), bool(rng.integers(2)))
        view.update(i, loads[i].queue_depth, loads[i].num_active_sessions, loads[i].busy)
        assert list(view) == loads
        assert list(view.least_loaded()) == scan_least(loads)


@pytest.mark.parametrize("policy", [JoinShortestQueueRouting(), RandomRouting()])
def test_policies_answer_the_same_on_a_view_and_a_list(policy: object) -> None:
    rng = np.random.default_rng(11)
    for seed in range(200):
        loads = [
            ServerLoad(10 + i, int(rng.integers(3)), int(rng.integers(3)), False)
            for i in range(int(rng.integers(1, 9)))
        ]
        on_list, on_view = np.random.default_rng(seed), np.random.default_rng(seed)
        assert policy.route(LoadView(loads), on_view) == policy.route(loads, on_list)  # type: ignore[attr-defined]
        assert on_view.random() == on_list.random()  # the same draws were taken
    robin_list, robin_view = RoundRobinRouting(), RoundRobinRouting()
    loads = [ServerLoad(i, 0, 0) for i in range(3)]
    picks = [robin_view.route(LoadView(loads), rng) for _ in range(4)]
    assert picks == [robin_list.route(loads, rng) for _ in range(4)] == [0, 1, 2, 0]


def test_check_route_on_a_view() -> None:
    view = LoadView([ServerLoad(5, 0, 0), ServerLoad(8, 0, 0)])
    assert check_route(JoinShortestQueueRouting(), 8, view) == 8
    assert check_route(JoinShortestQueueRouting(), np.int64(5), view) == 5
    with pytest.raises(PolicyContractError, match=r"returned server 6; expected one of \[5, 8\]"):
        check_route(JoinShortestQueueRouting(), 6, view)
