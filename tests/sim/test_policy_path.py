"""The shortcuts of the handler sets that call every policy: the reference's hops folded
into the events around them (against the every-hop set), the ``inbound`` set's
specialised BATCH_END without ARRIVE events (fast/batch_end.py, fast/inbound.py), and the
batching policy's queue view kept between dispatches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from edgespec.core.types import BatchPlan, PendingVerification
from edgespec.policies import registry
from edgespec.policies.inputs import UNOBSERVED
from edgespec.policies.interfaces import BatchLimits, WindowDecision, WindowObservation
from edgespec.policies.slo import DeadlineRule
from edgespec.sim.loop import batch_choice as choice
from edgespec.sim.loop import server as server_events
from edgespec.sim.model.entities import ServerState, Session
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import SimResult, simulate
from tests.sim.helpers import tiny_scenario

CASES = {
    "static": [],
    "dynamic-lab": ["policies.window.name=dynamic", "policies.batching.name=lab"],
    "dynamic-kv-eviction": [
        "policies.window.name=dynamic",
        "auto_topology.servers.0.kv_budget_tokens=300",
    ],
    "fused": ["mode=fused", "policies.window.name=dynamic"],
    "centralized": [
        "mode=centralized",
        "workload.kind=poisson",
        "workload.think_time_s=0",  # closed-loop only
        "workload.rate_per_s=3",
    ],
}


def _run(overrides: list[str], handlers: str | None = None) -> SimResult:
    data = tiny_scenario()
    scenario = scenario_from_dict(data, [*overrides, "fast_path=false", "record_rounds=true"])
    return simulate(scenario, handlers=handlers)


@pytest.mark.parametrize("name", sorted(CASES))
def test_folded_hops_equal_every_hop(name: str) -> None:
    """DRAFT_DONE and DELIVER folded into BATCH_END and round start give the records that
    scheduling each hop as its own event gives."""
    folded = _run(CASES[name])
    assert folded.path == "reference (fast_path=false)"
    hops = _run(CASES[name], "every_hop")
    assert folded.num_rounds == hops.num_rounds > 100
    assert folded.requests == hops.requests
    assert folded.batches == hops.batches
    assert folded.rounds == hops.rounds
    assert folded.num_events < hops.num_events


@dataclass(frozen=True)
class _DepthWindow:
    """γ from the queue depth and the last verdict (test-only): windows longer than the
    latency tables start with, and answers that depend on the reported queue depth."""

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        return WindowDecision(1 + 3 * obs.queue_depth + 2 * (obs.last_num_accepted or 0))


SPECIALISED_CASES = {
    **{name: overrides for name, overrides in CASES.items() if name in ("static", "dynamic-lab")},
    "dynamic-kv-eviction-no-jitter": [
        "policies.window.name=dynamic",
        "auto_topology.servers.0.kv_budget_tokens=300",
        "links.wan.jitter_ms=0",
    ],
    "jitter-without-loss": ["links.wan.loss_rate=0", "policies.window.name=dynamic"],
    "wisp-token-speed": [
        "policies.batching={name: wisp, params: {profile: a100-qwen3-32b}}",
        "deadline_rule=token_speed",
    ],
    "depth-window": ["policies.window.name=depth", "auto_topology.servers.0.count=1"],
}


@pytest.mark.parametrize("name", sorted(SPECIALISED_CASES))
def test_specialised_batch_end_equals_generic_handlers(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without round records, the ``inbound`` set calls the policies from the specialised
    BATCH_END with no ARRIVE events; it gives the reference's records."""
    monkeypatch.setitem(registry.WINDOW, "depth", _DepthWindow)
    overrides = [*SPECIALISED_CASES[name], "fast_path=false", "record_rounds=false"]
    specialised = simulate(scenario_from_dict(tiny_scenario(), overrides), handlers="inbound")
    generic = simulate(scenario_from_dict(tiny_scenario(), overrides))
    assert generic.path == "reference (fast_path=false)"
    assert specialised.num_rounds == generic.num_rounds > 100
    assert specialised.requests == generic.requests
    assert specialised.batches == generic.batches
    assert specialised.num_events < generic.num_events  # no ARRIVE events


@dataclass
class _CountingWindow:
    """γ = 3 (test-only), counting its calls and the observations it got."""

    observes: bool
    calls: int = 0
    unobserved: int = 0

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        self.calls += 1
        self.unobserved += obs is UNOBSERVED
        return WindowDecision(3)


@pytest.mark.parametrize("record_rounds", [True, False])
def test_window_policy_that_does_not_observe(
    record_rounds: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window policy declaring ``observes = False`` is still called every round (and
    gives the same records), with UNOBSERVED instead of its session's history."""
    results = {}
    for observing in (True, False):
        policy = _CountingWindow(observing)
        monkeypatch.setitem(registry.WINDOW, "counting", lambda p=policy: p)
        overrides = ["policies.window.name=counting", f"record_rounds={record_rounds}".lower()]
        result = simulate(scenario_from_dict(tiny_scenario(), [*overrides, "fast_path=false"]))
        assert 100 < result.num_rounds <= policy.calls <= result.num_rounds + 12  # 12 in flight
        assert policy.unobserved == (0 if observing else policy.calls)
        results[observing] = result
    assert results[True].requests == results[False].requests
    assert results[True].batches == results[False].batches
    assert results[True].rounds == results[False].rounds


@dataclass(frozen=True)
class _LeastCachedFirst:
    """One entry per batch, the one with the fewest cached tokens (test-only): every
    decision depends on ``num_cached_tokens``, and entries wait across dispatches."""

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        best = min(queue, key=lambda e: (e.num_cached_tokens, e.entry_id))
        return BatchPlan((best.entry_id,))


def test_queue_view_rebuilt_after_kv_eviction(monkeypatch: pytest.MonkeyPatch) -> None:
    """A queued block whose session's KV is evicted while it waits shows the batching
    policy 0 cached tokens, exactly as a view rebuilt at every dispatch does."""
    monkeypatch.setitem(registry.BATCHING, "least_cached", _LeastCachedFirst)
    overrides = [
        "policies.batching.name=least_cached",
        "auto_topology.servers.0.count=1",
        "auto_topology.servers.0.kv_budget_tokens=1000",
    ]
    stale = 0
    build = choice.pending_entry

    def counting(
        s: Session, cached: int, rule: DeadlineRule = "pace", server: ServerState | None = None
    ) -> PendingVerification:
        nonlocal stale
        if s.pending is not None and s.pending.entry_id == s.entry_id:
            stale += 1  # built before, for this very block: its KV changed since
        return build(s, cached, rule, server)

    monkeypatch.setattr(choice, "pending_entry", counting)
    cached = _run(overrides)
    assert stale > 0  # evictions of queued sessions did happen

    select = choice.select_batch

    def rebuilding(
        server: ServerState,
        t: float,
        policy: object,
        limits: tuple[BatchLimits, BatchLimits],
        rule: DeadlineRule = "pace",
    ) -> list[Session]:
        for s in server.queue:
            s.pending = None
        return select(server, t, policy, limits, rule)  # type: ignore[arg-type]

    monkeypatch.setattr(server_events, "select_batch", rebuilding)
    rebuilt = _run(overrides)
    assert cached.num_rounds == rebuilt.num_rounds > 100
    assert cached.requests == rebuilt.requests
    assert cached.batches == rebuilt.batches
    assert cached.rounds == rebuilt.rounds
