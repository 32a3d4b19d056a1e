"""The simulator's routing inputs at fleet scale (sim/model/router.py, sim/fast/inbound.py): every
route sees, or chooses from, exactly the loads a scan of every server would give."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from heapq import heappush
from math import inf
from typing import Any

import numpy as np
import pytest

from edgespec.core.types import ServerLoad
from edgespec.hardware.cost_models import WispCost
from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.estimator import WispCoefficients
from edgespec.policies.routing import JoinShortestQueueRouting, RoundRobinRouting
from edgespec.sim.model import router as routing
from edgespec.sim.model.entities import ServerState, Session
from edgespec.sim.model.inbound_queue import DueIndex
from edgespec.sim.model.layout import Layout
from edgespec.sim.model.rng import spawn_generator
from edgespec.sim.setup.scenario import Scenario, scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario


def exact_loads(servers: list[ServerState], t: float, inclusive: bool | None) -> list[ServerLoad]:
    """Each server's load as a scan sees it: its queue plus its inbound blocks due."""
    loads = []
    for s in servers:
        due = sum(1 for a, _, _ in s.inbound if a < t or (inclusive and a == t))
        loads.append(ServerLoad(s.server_id, len(s.queue) + due, s.num_active, s.busy))
    return loads


TIES = ["workload.think_time_s=0", "workload.ramp_s=0", "links.wan.jitter_ms=0"]


def _fleet(num_devices: int, num_servers: int, overrides: list[str]) -> Scenario:
    """The tiny scenario with this fleet, 15 simulated seconds."""
    data = tiny_scenario()
    data["auto_topology"]["devices"][0]["count"] = num_devices
    data["auto_topology"]["servers"][0]["count"] = num_servers
    return scenario_from_dict(data, ["duration_s=15", *overrides])


@pytest.mark.parametrize(
    ("overrides", "scan_floor"),
    [
        ([], routing.SCAN_FLOOR),  # inlined JSQ, lazy inbound
        (TIES, routing.SCAN_FLOOR),
        (TIES, 10**9),  # inlined JSQ that only ever checks the ties one by one
        (TIES, -(10**9)),  # ... that always drains every server with blocks due
        (["fast_path=false"], routing.SCAN_FLOOR),  # the JSQ policy object, after drain_all
        (["policies.routing.name=round_robin"], routing.SCAN_FLOOR),
        (["record_rounds=true"], routing.SCAN_FLOOR),  # ARRIVE events: queues always exact
    ],
)
def test_every_route_matches_a_scan_of_every_server(
    overrides: list[str], scan_floor: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routing, "SCAN_FLOOR", scan_floor)
    scenario = _fleet(60, 12, overrides)
    original = routing.Router.route
    checked = {"routes": 0, "ties": 0}

    def route(self: routing.Router, cell: int, t: float, inclusive: bool | None) -> Any:
        before = exact_loads(self.servers, t, inclusive)
        chosen = original(self, cell, t, inclusive)
        view = self.cells[cell].view
        assert exact_loads(self.servers, t, inclusive) == before  # draining changes no load
        if self.inline_jsq:
            best = min((x.queue_depth, x.num_active_sessions) for x in before)
            tied = [x.server_id for x in before if (x.queue_depth, x.num_active_sessions) == best]
            assert chosen.server_id in tied
            assert view.least_loaded_ids() == tied
            checked["ties"] += len(tied) > 1
        else:
            assert list(view) == before
        checked["routes"] += 1
        return chosen

    monkeypatch.setattr(routing.Router, "route", route)
    simulate(scenario, keep_records=False)
    assert checked["routes"] > 100
    if scenario.policies.routing.name == "jsq" and scenario.fast_path:
        assert checked["ties"] > 20


def test_inlined_jsq_rents_checks_before_it_buys_a_full_drain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ties are checked one by one until the checks since the last full drain exceed what
    a full drain is worth; then every server with blocks due is drained. Both happen in a
    run with many ties, and the checks made between two full drains stay within budget."""
    scenario = _fleet(200, 40, TIES)
    settle = routing.Router._settle_least
    seen = {"scans": 0, "drains": 0}

    def counting(self: routing.Router, view: Any, t: float, inclusive: bool) -> None:
        before = self.scan_checks
        budget = routing.SCAN_FLOOR + routing.SCAN_PER_ROUND * (
            self.rounds() - self.rounds_at_drain
        )
        settle(self, view, t, inclusive)
        if self.scan_checks == 0 and before + view.num_least_loaded() > 0:
            seen["drains"] += 1
        else:
            seen["scans"] += 1
            assert before + view.num_least_loaded() <= budget

    monkeypatch.setattr(routing.Router, "_settle_least", counting)
    simulate(scenario, keep_records=False)
    assert seen["scans"] > 50
    assert seen["drains"] > 5, seen


def _no_full_drain(t: float, inclusive: bool) -> None:
    raise AssertionError("the ties are few: they are checked one by one")


def _router_with_blocks(
    blocks: dict[int, float],
    queued: tuple[int, ...] = (0, 0, 0),
    drain_due: Callable[[float, bool], None] = _no_full_drain,
    rounds: Callable[[], int] = lambda: 0,
) -> tuple[routing.Router, list[float]]:
    """Three idle servers with ``queued`` blocks queued (all tied by default) and blocks in
    flight: server -> arrival time, listed in the servers' DueIndex as the engine does;
    by default no full drain is ever chosen."""
    cost = WispCost(WispCoefficients(1e-4, 0.0, 0.0, 0.01))
    servers = [ServerState(i, cost, None, 10**6, 8, 10**6) for i in range(3)]
    for server, n in zip(servers, queued, strict=True):
        server.queue.extend(object.__new__(Session) for _ in range(n))
    due = DueIndex(len(servers))
    for server_id, arrival_s in blocks.items():
        heappush(servers[server_id].inbound, (arrival_s, 7, object.__new__(Session)))
        due.sent(arrival_s, server_id)
    cells = routing.build_cells(servers, Layout.whole(1, 3), JoinShortestQueueRouting(), 0)
    router = routing.Router(servers, cells, True, drain_due, rounds, due.listed)
    return router, due.listed


@pytest.mark.parametrize(("inclusive", "tied"), [(True, [0, 2]), (False, [0, 1, 2])])
def test_a_block_arriving_at_the_routing_time_counts_only_after_arrive(
    inclusive: bool, tied: list[int]
) -> None:
    """Routing at t = 1.0 with a block due at exactly 1.0 on server 1: an event that runs
    after ARRIVE (a REQUEST) sees it queued, one that runs before (a DELIVER) does not."""
    router, _ = _router_with_blocks({1: 1.0, 2: 1.5})
    router.route(0, 1.0, inclusive)
    view = router.cells[0].view
    assert view.least_loaded_ids() == tied
    assert [len(s.queue) for s in router.servers] == [0, int(inclusive), 0]
    assert router.scan_checks == 3  # each tie checked once, none read twice


def test_a_stale_listing_is_checked_on_the_server() -> None:
    """A dispatch drains a server without raising its listed time: the router then reads
    the server itself, finds nothing due and keeps it among the least loaded."""
    router, listed = _router_with_blocks({1: 0.5})
    router.servers[1].inbound.clear()  # taken by a dispatch; still listed at 0.5
    assert listed[1] == 0.5
    router.route(0, 1.0, True)
    assert router.cells[0].view.least_loaded_ids() == [0, 1, 2]


def test_settling_rechecks_the_servers_that_join_the_least_loaded() -> None:
    """Server 0's block makes it tie with server 1, whose own due block must then be
    drained too; a server found with nothing due is never checked again."""
    router, _ = _router_with_blocks({0: 0.5, 1: 0.5}, queued=(0, 1, 2))
    assert router.route(0, 1.0, True) is router.servers[0]
    assert [len(s.queue) for s in router.servers] == [1, 2, 2]
    assert router.cells[0].view.least_loaded_ids() == [0]
    assert router.scan_checks == 3  # 0 (drained), 0 (nothing more due), 1 (drained)


def test_settling_before_arrive_leaves_blocks_due_at_the_routing_time() -> None:
    """Routing at a DELIVER at t = 1.0: server 1's listing is stale (0.5) and its block
    is due at 1.0 exactly; server 2 has one block before 1.0 and one at 1.0. Only the
    block before 1.0 moves."""
    router, _ = _router_with_blocks({1: 0.5, 2: 0.75})
    s1, s2 = router.servers[1], router.servers[2]
    s1.inbound[:] = [(1.0, 7, object.__new__(Session))]
    heappush(s2.inbound, (1.0, 8, object.__new__(Session)))
    router.route(0, 1.0, False)
    assert [len(s.queue) for s in router.servers] == [0, 0, 1]
    assert [len(s.inbound) for s in router.servers] == [0, 1, 1]
    assert router.cells[0].view.least_loaded_ids() == [0, 1]


def test_rent_or_buy_checks_until_the_budget_then_drains_everything_due() -> None:
    """The budget: SCAN_FLOOR + SCAN_PER_ROUND x the rounds verified since the last full
    drain; a route whose checks (its ties included) exceed it drains every server."""
    rounds = [2]
    drains: list[tuple[float, bool]] = []
    budget = routing.SCAN_FLOOR + routing.SCAN_PER_ROUND * 2  # 24

    def drain_due(t: float, inclusive: bool) -> None:
        drains.append((t, inclusive))
        router.servers[1].queue.append(object.__new__(Session))  # what drain_all moved
        router.touched.add(router.servers[1])

    router, _ = _router_with_blocks({}, drain_due=drain_due, rounds=lambda: rounds[0])
    router.scan_checks = budget - 3  # with the 3 ties: exactly the budget, still renting
    router.route(0, 1.0, True)
    assert (drains, router.scan_checks, router.rounds_at_drain) == ([], budget, 0)
    router.route(0, 1.5, False)  # over it: buys
    assert (drains, router.scan_checks, router.rounds_at_drain) == ([(1.5, False)], 0, 2)
    assert router.cells[0].view.least_loaded_ids() == [0, 2]  # the drained load is read
    router.scan_checks = routing.SCAN_FLOOR - 1  # the rounds before the drain count no more
    router.route(0, 2.0, True)
    assert (drains[1:], router.scan_checks, router.rounds_at_drain) == ([(2.0, True)], 0, 2)
    rounds[0] = 3  # one round verified since: a budget of SCAN_FLOOR + 4
    router.route(0, 2.5, True)
    assert len(drains) == 2 and router.scan_checks == 2  # servers 0 and 2, each checked once


def test_jsq_draws_only_to_break_a_tie_and_over_every_tied_server() -> None:
    router, _ = _router_with_blocks({}, queued=(1, 0, 0))
    replay = spawn_generator(0, "routing", None)
    rng = router.cells[0].rng
    chosen = [router.route(0, 1.0, None).server_id for _ in range(12)]
    assert chosen == [[1, 2][int(replay.integers(2))] for _ in range(12)]
    assert set(chosen) == {1, 2}
    router.servers[2].queue.append(object.__new__(Session))
    router.touched.add(router.servers[2])
    router.refresh()
    state = rng.bit_generator.state
    assert router.route(0, 1.0, None).server_id == 1  # the only least-loaded server
    assert rng.bit_generator.state == state  # and no draw


def test_pinned_cells_get_their_own_servers_policy_copy_and_stream() -> None:
    cost = WispCost(WispCoefficients(1e-4, 0.0, 0.0, 0.01))
    servers = [ServerState(i, cost, None, 10**6, 8, 10**6) for i in range(3)]
    layout = Layout((0, 1), (0, 1), (1, 0, 1), (0, 1), (0, 1, 2))
    policy = RoundRobinRouting()
    cells = routing.build_cells(servers, layout, policy, 3)
    assert [[x.server_id for x in c.view] for c in cells] == [[1], [0, 2]]
    router = routing.Router(servers, cells, False, _no_full_drain, lambda: 0, [inf] * 3)
    assert [router.route(1, 0.0, None).server_id for _ in range(3)] == [0, 2, 0]
    assert router.route(0, 0.0, None).server_id == 1  # cell 0's cursor starts afresh
    assert policy == RoundRobinRouting()  # the caller's instance is left alone
    for cell, cell_id in zip(cells, (0, 1), strict=True):
        assert cell.rng.random() == spawn_generator(3, "routing", cell_id).random()
    with pytest.raises(ValueError, match=r"^servers \[1\] belong to no routing cell$"):
        routing.Router(servers, [cells[1]], False, _no_full_drain, lambda: 0, [inf] * 3)


def test_a_policy_naming_an_unknown_server_is_an_error() -> None:
    class Nowhere:
        def route(self, loads: Sequence[ServerLoad], rng: np.random.Generator) -> int:
            return 99

    router, _ = _router_with_blocks({})
    router.inline_jsq = False
    router.cells[0].policy = Nowhere()
    with pytest.raises(PolicyContractError) as error:
        router.route(0, 1.0, None)
    assert (
        str(error.value) == "routing policy Nowhere returned server 99; expected one of [0, 1, 2]"
    )
