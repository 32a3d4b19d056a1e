"""The simulator's routing inputs at fleet scale (sim/routing.py, sim/inbound.py): every
route sees, or chooses from, exactly the loads a scan of every server would give."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.core.types import ServerLoad
from edgespec.sim import routing
from edgespec.sim.entities import ServerState
from edgespec.sim.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario


def exact_loads(servers: list[ServerState], t: float, inclusive: bool | None) -> list[ServerLoad]:
    """Each server's load as a scan sees it: its queue plus its inbound blocks due."""
    loads = []
    for s in servers:
        due = sum(1 for a, _, _ in s.inbound if a < t or (inclusive and a == t))
        loads.append(ServerLoad(s.server_id, len(s.queue) + due, s.num_active, s.busy))
    return loads


@pytest.mark.parametrize(
    "overrides",
    [
        [],  # inlined JSQ, lazy inbound
        ["workload.think_time_s=0", "workload.ramp_s=0", "links.wan.jitter_ms=0"],  # ties
        ["fast_path=false"],  # the JSQ policy object on the view, after drain_all
        ["policies.routing.name=round_robin"],
        ["record_rounds=true"],  # ARRIVE events: queues always exact
    ],
)
def test_every_route_matches_a_scan_of_every_server(
    overrides: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tiny_scenario()
    data["auto_topology"]["devices"][0]["count"] = 60
    data["auto_topology"]["servers"][0]["count"] = 12
    scenario = scenario_from_dict(data, ["duration_s=15", *overrides])
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
