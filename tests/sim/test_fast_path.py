"""The fast path (collapsed events, inline FCFS) must reproduce the straightforward
path exactly: same records, same metrics, on the same seed."""

from __future__ import annotations

from pathlib import Path

import pytest
from numpy.random import default_rng

from edgespec.sim.acceptance import TraceAcceptance
from edgespec.sim.fastpath import accept_runs
from edgespec.sim.rng import UniformStream
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


@pytest.mark.parametrize(
    "seq",
    [(1, 0, 1, 1, 0, 0, 1), (0,), (1,), (1, 1, 1), (0, 1, 1, 1, 1, 1), (1, 1, 0, 1, 1)],
)
def test_accept_runs_equal_trace_replay(seq: tuple[int, ...]) -> None:
    """min(runs[p % n], γ) is TraceAcceptance.accepted for every position and window."""
    runs = accept_runs(seq)
    replay = TraceAcceptance()
    for position in range(3 * len(seq)):
        for gamma in range(9):
            expected = replay.accepted(seq, position, gamma, UniformStream(default_rng(0)))
            assert min(runs[position % len(seq)], gamma) == expected, (position, gamma)
    assert accept_runs((1, 0, 1, 1, 0, 0, 1)) == [1, 0, 2, 1, 0, 0, 2]
