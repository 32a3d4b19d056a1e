"""Execution modes and the KV cache, checked through invariants of the records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from edgespec.core.types import BatchPlan, PendingVerification
from edgespec.policies import registry
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.interfaces import BatchLimits, WindowDecision, WindowObservation
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import SimResult, simulate
from tests.sim.helpers import tiny_scenario


def _run(*overrides: str) -> SimResult:
    return simulate(scenario_from_dict(tiny_scenario(), [*overrides, "record_rounds=true"]))


def test_centralized_decodes_one_token_per_round_without_drafting() -> None:
    result = _run("mode=centralized")
    assert result.requests
    for r in result.requests:
        assert r.num_rounds == r.num_output_tokens and r.num_drafted == 0 and r.draft_s == 0.0
    assert all(rd.num_committed == 1 and rd.uplink_s == 0.0 for rd in result.rounds
               if rd.round_index > 0)  # fmt: skip


def test_fused_crosses_the_network_only_for_the_prompt_and_the_result() -> None:
    result = _run("mode=fused")
    first_uplinks = {rd.request_id: rd.uplink_s for rd in result.rounds if rd.round_index == 0}
    for rd in result.rounds:
        if rd.round_index > 0:
            assert rd.uplink_s == 0.0
    for r in result.requests:
        assert r.num_drafted > 0
        # prompt upload + first-token and last-token downlinks (one when they coincide)
        assert r.network_s > first_uplinks[r.request_id] >= 0.015


def test_distributed_rounds_pay_the_link_both_ways() -> None:
    result = _run("links.wan.jitter_ms=0", "links.wan.loss_rate=0")
    for rd in result.rounds:
        assert rd.uplink_s >= 0.015 and rd.downlink_s >= 0.015  # RTT/2 = 15 ms
        parts = rd.draft_s + rd.uplink_s + rd.queue_s + rd.verify_s + rd.downlink_s
        assert abs((rd.end_s - rd.start_s) - parts) < 1e-9


def test_follow_up_rounds_hit_the_cache_and_a_tiny_budget_forces_cold_starts() -> None:
    warm = _run("policies.window={name: static, params: {gamma: 3}}")
    cached = sum(b.num_cached_tokens for b in warm.batches)
    new = sum(b.num_new_tokens for b in warm.batches)
    assert cached > 5 * new  # follow-ups forward γ + 1 tokens against a long prefix
    cold = _run("auto_topology.servers.0.kv_budget_tokens=30")  # below every prompt
    assert sum(b.num_cached_tokens for b in cold.batches) == 0
    prompts = {r.request_id: r.num_prompt_tokens for r in cold.requests}
    assert sum(b.num_new_tokens for b in cold.batches) > sum(prompts.values()) * 3


@dataclass
class _RecordingFifo:
    """FCFS that remembers what it was shown (test-only, deliberately stateful)."""

    seen: list[PendingVerification] = field(default_factory=list)

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        self.seen.extend(queue)
        return FcfsBatching().select(queue, now_s, limits)


@dataclass
class _RecordingWindow:
    seen: list[WindowObservation] = field(default_factory=list)

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        self.seen.append(obs)
        return WindowDecision(3)


def test_policies_see_deadlines_and_observations(monkeypatch: pytest.MonkeyPatch) -> None:
    batching, window = _RecordingFifo(), _RecordingWindow()
    monkeypatch.setitem(registry.BATCHING, "recording", lambda: batching)
    monkeypatch.setitem(registry.WINDOW, "recording", lambda: window)
    result = _run("policies.batching.name=recording", "policies.window.name=recording")
    targets = {"slow": 2.0, "fast": 8.0}
    arrivals = {r.request_id: (r.arrival_s, targets[r.slo_class]) for r in result.requests}
    first = [p for p in batching.seen if p.num_cached_tokens == 0 and p.session_id in arrivals]
    assert first
    for p in first:  # a first round: deadline = arrival + 1 token / target speed
        arrival, target = arrivals[p.session_id]
        assert p.deadline_s == arrival + 1 / target
    assert window.seen[0].tpot_s is None and window.seen[0].recent_acceptance is None
    tpots = [o.tpot_s for o in window.seen if o.tpot_s is not None]
    assert tpots and min(tpots) >= 0 and max(tpots) > 0
    # rtt: the last round's uplink + downlink (policies.inputs), 0 before the first round
    assert (window.seen[0].rtt_s, window.seen[0].previous_gamma) == (0.0, 0)
    later = [o for o in window.seen if o.previous_gamma]
    assert later and all(o.rtt_s >= 0.03 and o.previous_gamma == 3 for o in later)
