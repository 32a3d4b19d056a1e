"""The fast path (collapsed events, inline FCFS) must reproduce the straightforward
path exactly: same records, same metrics, on the same seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.sim.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario

CASES = {
    "fcfs-static-iid": [],
    "lab-dynamic-decay": [
        "policies.batching.name=lab",
        "policies.window.name=dynamic",
        "acceptance.kind=decay",
        "policies.routing.name=random",
    ],
    "fcfs-dynamic-kv-eviction": [
        "policies.window.name=dynamic",
        "auto_topology.servers.0.kv_budget_tokens=300",
    ],
    "fused": ["mode=fused", "policies.routing.name=round_robin"],
    "centralized-poisson": ["mode=centralized", "workload.kind=poisson", "workload.rate_per_s=3"],
    "stochastic-poisson-static": [
        "temperature=0.7",
        "workload.kind=poisson",
        "workload.rate_per_s=2",
        "policies.window={name: static, params: {gamma: 6}}",
    ],
    "trace-acceptance-small-kv": [
        "acceptance={kind: trace, traces: [TRACE]}",
        "links.wan.jitter_ms=0",
        "auto_topology.servers.0.kv_budget_tokens=300",
    ],
}


@pytest.mark.parametrize("rounds", [True, False])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_path_equals_straightforward(name: str, rounds: bool) -> None:
    """With round records on, the generic handlers run with collapsed events; with them
    off, a static distributed run also uses the specialised BATCH_END closure."""
    data = tiny_scenario()
    trace = Path(__file__).with_name("acceptance_trace.jsonl")
    overrides = [o.replace("TRACE", str(trace)) for o in CASES[name]]
    overrides = [*overrides, f"record_rounds={str(rounds).lower()}"]
    fast = simulate(scenario_from_dict(data, [*overrides, "fast_path=true"]))
    slow = simulate(scenario_from_dict(data, [*overrides, "fast_path=false"]))
    assert fast.num_rounds == slow.num_rounds > 100
    assert fast.requests == slow.requests
    assert fast.batches == slow.batches
    assert fast.rounds == slow.rounds
    assert len(fast.rounds) == (fast.num_rounds if rounds else 0)
    assert fast.num_events < slow.num_events  # it did take the shortcut
