"""The fast path (collapsed events, inline FCFS) must reproduce the straightforward
path exactly: same records, same metrics, on the same seed."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass
from heapq import heappush
from pathlib import Path

import pytest
from numpy.random import default_rng

from edgespec.core.types import BatchPlan, PendingVerification
from edgespec.hardware.cost_models import WispCost
from edgespec.policies import registry
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.estimator import WispCoefficients
from edgespec.policies.interfaces import BatchLimits
from edgespec.sim.fast.dispatch import accept_runs
from edgespec.sim.model.acceptance import TraceAcceptance
from edgespec.sim.model.entities import ServerState, Session
from edgespec.sim.model.inbound_queue import drain
from edgespec.sim.model.rng import UniformStream
from edgespec.sim.setup.scenario import scenario_from_dict
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
    "centralized-poisson": [
        "mode=centralized",
        "workload.kind=poisson",
        "workload.think_time_s=0",  # closed-loop only
        "workload.rate_per_s=3",
    ],
    "stochastic-poisson-static": [
        "temperature=0.7",
        "workload.kind=poisson",
        "workload.think_time_s=0",  # closed-loop only
        "workload.rate_per_s=2",
        "policies.window={name: static, params: {gamma: 6}}",
    ],
    "lab-static-random": ["policies.batching.name=lab", "policies.routing.name=random"],
    # WISP's deadlines read per-round fields the specialised BATCH_END must keep too
    "wisp-token-speed-static": [
        "policies.batching={name: wisp, params: {profile: a100-qwen3-32b}}",
        "deadline_rule=token_speed",
    ],
    "wisp-token-speed-dynamic": [
        "policies.batching={name: wisp, params: {profile: a100-qwen3-32b, guard_s: 0.05}}",
        "deadline_rule=token_speed",
        "policies.window.name=dynamic",
    ],
    "idle-servers-simultaneous": [  # WAKE events, stale wakes and equal arrival times
        "auto_topology.servers.0.count=8",
        "links.wan={rtt_ms: 20.0, jitter_ms: 0.0, loss_rate: 0.0}",
        "workload.think_time_s=0",
        "workload.ramp_s=0",
    ],
    "jitter-without-loss": ["links.wan.loss_rate=0"],  # paired jitter draws
    "zero-rtt-round-robin": [
        "links.wan={rtt_ms: 0.0, jitter_ms: 0.0, loss_rate: 0.0}",
        "policies.routing.name=round_robin",
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
    trace = Path(__file__).parent.parent / "acceptance_trace.jsonl"
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
    if not rounds and _lazy_arrivals(overrides):
        # no ARRIVE events: BATCH_END, at most one WAKE per batch, DELIVER, REQUEST, ...
        assert fast.num_events <= 2 * len(fast.batches) + 3 * len(fast.requests) + 100


def _lazy_arrivals(overrides: list[str]) -> bool:
    """Distributed, static window: the specialised BATCH_END and no ARRIVE events."""
    window = next((o for o in overrides if o.startswith("policies.window")), "static")
    return "static" in window and not any(o.startswith("mode=") for o in overrides)


@dataclass
class _HoldForTwo:
    """FCFS that waits for a second block unless forced or the head has waited 5 ms
    (test-only): empty plans, and decisions that depend on when it is asked."""

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        waited_s = now_s - min(e.enqueued_s for e in queue)
        if len(queue) < 2 and not limits.force and waited_s < 0.005:
            return BatchPlan((), reason="hold")
        return FcfsBatching().select(queue, now_s, limits)


@pytest.mark.parametrize("servers", [1, 3])
def test_fast_path_with_empty_batching_plans(monkeypatch: pytest.MonkeyPatch, servers: int) -> None:
    """A policy that declines to batch leaves an idle server with a queue; the next
    arrival (a WAKE in the fast path) must dispatch again, and only then."""
    monkeypatch.setitem(registry.BATCHING, "hold", _HoldForTwo)
    overrides = ["policies.batching.name=hold", f"auto_topology.servers.0.count={servers}"]
    fast = simulate(scenario_from_dict(tiny_scenario(), [*overrides, "fast_path=true"]))
    slow = simulate(scenario_from_dict(tiny_scenario(), [*overrides, "fast_path=false"]))
    assert fast.num_rounds == slow.num_rounds > 100
    assert fast.requests == slow.requests
    assert fast.batches == slow.batches
    assert min(b.batch_size for b in fast.batches) == 1  # forced single batches happened


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


def test_inbound_drain_order_and_cutoff() -> None:
    """Blocks enter the queue in ARRIVE-event order (time, then device); at the cutoff
    time only when the reading event runs after ARRIVE."""
    server = ServerState(0, WispCost(WispCoefficients(1e-4, 0.0, 0.0, 0.01)), None, 10**6, 8, 10**6)
    sessions = {}
    for device_id, arrival_s in [(5, 2.0), (3, 1.0), (1, 2.0), (4, 3.0)]:
        s = object.__new__(Session)
        sessions[device_id] = s
        heappush(server.inbound, (arrival_s, device_id, s))
    drain(server, 2.0, inclusive=False)  # e.g. routing at a DELIVER at t = 2
    assert server.queue == [sessions[3]]
    drain(server, 2.0)  # a DISPATCH (or REQUEST) at t = 2
    assert server.queue == [sessions[3], sessions[1], sessions[5]]
    assert [(s.enqueued_s, s.entry_id) for s in server.queue] == [(1.0, 0), (2.0, 1), (2.0, 2)]
    assert server.inbound == [(3.0, 4, sessions[4])]


@pytest.mark.parametrize("enabled", [True, False])
def test_simulate_restores_the_garbage_collector(enabled: bool) -> None:
    """The run switches the cyclic collector off and leaves it as it found it."""
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        simulate(scenario_from_dict(tiny_scenario(), ["duration_s=2"]))
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
