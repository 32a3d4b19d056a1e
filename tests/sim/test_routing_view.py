"""The simulator's routing inputs at fleet scale (sim/routing.py, sim/inbound.py): every
route sees, or chooses from, exactly the loads a scan of every server would give."""

from __future__ import annotations

from heapq import heappush
from typing import Any

import pytest

from edgespec.core.types import ServerLoad
from edgespec.policies.estimator import WispCoefficients
from edgespec.policies.routing import JoinShortestQueueRouting
from edgespec.sim import inbound, routing
from edgespec.sim.cells import Layout
from edgespec.sim.cost_models import WispCost
from edgespec.sim.entities import ServerState, Session
from edgespec.sim.scenario import Scenario, scenario_from_dict
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


def _router_with_blocks(blocks: dict[int, float]) -> tuple[routing.Router, list[float]]:
    """Three idle, empty servers (all tied) and blocks in flight: server -> arrival time,
    listed in the servers' DueIndex as the engine does; no full drain is ever chosen."""
    cost = WispCost(WispCoefficients(1e-4, 0.0, 0.0, 0.01))
    servers = [ServerState(i, cost, None, 10**6, 8, 10**6) for i in range(3)]
    due = inbound.DueIndex(len(servers))
    for server_id, arrival_s in blocks.items():
        heappush(servers[server_id].inbound, (arrival_s, 7, object.__new__(Session)))
        due.sent(arrival_s, server_id)
    cells = routing.build_cells(servers, Layout.whole(1, 3), JoinShortestQueueRouting(), 0)

    def no_full_drain(t: float, inclusive: bool) -> None:
        raise AssertionError("the ties are few: they are checked one by one")

    router = routing.Router(servers, cells, True, no_full_drain, lambda: 0, due.listed)
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
