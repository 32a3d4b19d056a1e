"""Fused rounds on the server's engine and per-round fused/distributed switching: every
timestamp computed by hand.

Costs (tests/sim/helpers.hand_trace_scenario): device draft 10 ms per forwarded token;
verification 5 ms + 1 ms per new token + 0.1 ms per cached token; link 10 ms one way +
1 µs per byte, no jitter or loss. The servers' co-located draft is set here to 1 ms + 2 ms
per forwarded token per pass. Messages: draft block 64 + 4·(γ + prompt ids on a first
round) bytes, fused request 64 (+ 4 per prompt id on a first round), downlink 64 +
4·(1 + committed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from edgespec.hardware.cost_models import WispCost
from edgespec.policies import registry
from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.estimator import WispCoefficients
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.sim.model.entities import DeviceState, ServerState
from edgespec.sim.setup import build
from edgespec.sim.setup.resolve import ResolvedScenario
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import SimResult, simulate
from tests.sim.helpers import Tolerance, hand_trace_scenario, tiny_scenario

T = pytest.approx
EXACT: Tolerance = {"abs": 1e-12}
D2, F2 = WindowDecision(2), WindowDecision(2, True)
COLOCATED = WispCoefficients(0.002, 0.0, 0.0, 0.001)  # 1 ms + 2 ms per token, per pass


@dataclass
class _Scripted:
    """Answers ``script`` in turn (test-only), keeping every observation it is shown."""

    script: list[WindowDecision]
    seen: list[WindowObservation] = field(default_factory=list)
    may_fuse: ClassVar[bool] = True

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        self.seen.append(obs)
        return self.script[len(self.seen) - 1]


def _run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    rows: list[dict[str, Any]],
    script: list[WindowDecision],
    *overrides: str,
    colocated: WispCoefficients = COLOCATED,
    hops: bool = False,
) -> tuple[SimResult, _Scripted]:
    """``hops``: run the every-hop handler set (each hop an event of its own)."""
    policy = _Scripted(script)
    monkeypatch.setitem(registry.WINDOW, "scripted", lambda: policy)
    real = build.build_fleet

    def with_colocated(
        resolved: ResolvedScenario, cells: Any = None
    ) -> tuple[list[DeviceState], list[ServerState], Any]:
        devices, servers, layout = real(resolved, cells)
        for server in servers:
            server.draft_cost = WispCost(colocated)
        return devices, servers, layout

    monkeypatch.setattr(build, "build_fleet", with_colocated)
    data = hand_trace_scenario(tmp_path, rows, gamma=2)
    data["policies"] = {"window": {"name": "scripted"}}
    handlers = "every_hop" if hops else None
    return simulate(scenario_from_dict(data, list(overrides)), handlers=handlers), policy


def _rounds(result: SimResult) -> list[tuple[Any, ...]]:
    return [
        (r.round_index, r.fused, r.start_s, r.end_s, r.draft_s, r.uplink_s, r.queue_s,
         r.verify_s, r.downlink_s, r.num_drafted, r.num_accepted, r.num_committed)
        for r in result.rounds
    ]  # fmt: skip


def _at(*times: float) -> list[Any]:
    return [T(x, **EXACT) for x in times]


SWITCHING_ROW = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 11,
                 "drafter_id": 0, "acceptance_seq": [1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 0]}  # fmt: skip


@pytest.mark.parametrize("hops", [False, True])
@pytest.mark.parametrize("fast", [True, False])
def test_distributed_fused_fused_distributed_every_timestamp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool, hops: bool
) -> None:
    result, policy = _run(
        tmp_path, monkeypatch, [SWITCHING_ROW], [D2, F2, F2, D2], f"fast_path={fast}", hops=hops
    )
    # Round 0, distributed, decided at 0: prefill 4 + 1 step = 0.05; uplink 88 B 0.010088
    # → 0.060088; verify 6 new: 0.011 → 0.071088; accepts 2, commits 3; down 80 B 0.01008
    # → 0.081168 (first token).
    # Round 1, fused, decided on the device at 0.081168: fused request 64 B 0.010064 →
    # 0.091232; step = co-located draft (context 7, all unseen: 1 + 2·7 = 15 ms, then
    # 1 + 2 = 3 ms) 0.018 + verify (3 new, 6 cached) 0.0086 = 0.0266 → 0.117832; accepts
    # 1 (seq[3:5] = 1, 0), commits 2; down 76 B 0.010076 → 0.127908.
    # Round 2, fused, decided by the server at 0.117832 and queued then: draft (context 9,
    # seen) 2 × 3 ms = 0.006 + verify (3 new, 8 cached) 0.0088 = 0.0148 → 0.132632;
    # accepts 2, commits 3 (total 8); down 80 B 0.01008 → 0.142712.
    # Round 3, distributed, decided by the server at 0.132632; the device starts at
    # 0.142712 and catches up on the 5 tokens of the fused run: 0.05 + 0.01 = 0.06;
    # uplink 72 B 0.010072 → 0.212784; verify (3 new, 11 cached) 0.0091 → 0.221884;
    # accepts 2, commits 3 (total 11, done); down 80 B 0.01008 → 0.231964.
    assert _rounds(result) == [
        (0, False, 0.0, *_at(0.081168, 0.05, 0.010088, 0.0, 0.011, 0.01008), 2, 2, 3),
        (1, True, *_at(0.081168, 0.127908, 0.018, 0.010064, 0.0, 0.0086, 0.010076), 2, 1, 2),
        (2, True, *_at(0.117832, 0.142712, 0.006, 0.0, 0.0, 0.0088, 0.01008), 2, 2, 3),
        (3, False, *_at(0.142712, 0.231964, 0.06, 0.010072, 0.0, 0.0091, 0.01008), 2, 2, 3),
    ]
    batches = [(b.start_s, b.end_s, b.num_new_tokens, b.num_cached_tokens) for b in result.batches]
    assert batches == [
        (*_at(0.060088, 0.071088), 6, 0),
        (*_at(0.091232, 0.117832), 3, 6),
        (*_at(0.117832, 0.132632), 3, 8),
        (*_at(0.212784, 0.221884), 3, 11),
    ]
    (a,) = result.requests
    assert a.first_token_s == T(0.081168, **EXACT) and a.finish_s == T(0.231964, **EXACT)
    assert (a.num_rounds, a.num_drafted, a.num_accepted, a.num_output_tokens) == (4, 8, 7, 11)
    assert a.draft_s == T(0.05 + 0.018 + 0.006 + 0.06, **EXACT)
    assert a.verify_s == T(0.011 + 0.0086 + 0.0088 + 0.0091, **EXACT)
    assert a.network_s == T(0.010088 + 0.01008 + 0.010064 + 0.010076 + 0.01008 + 0.010072
                            + 0.01008, **EXACT)  # fmt: skip
    # One consultation per round, where the round runs; the observation's time is the
    # device's round start or the server's verdict.
    assert len(policy.seen) == 4
    assert [(o.previous_gamma, o.previous_fused, o.last_num_accepted) for o in policy.seen] == [
        (0, False, None),
        (2, False, 2),
        (2, True, 1),
        (2, True, 2),
    ]
    # rtt: round 0's uplink + downlink, kept through the fused rounds
    assert [o.rtt_s for o in policy.seen[1:]] == [T(0.010088 + 0.01008, **EXACT)] * 3
    # tpot = (now − first token) / (committed − 1): at the device, then at the verdicts
    assert policy.seen[1].tpot_s == 0.0
    assert policy.seen[2].tpot_s == T((0.117832 - 0.081168) / 4, **EXACT)
    assert policy.seen[3].tpot_s == T((0.132632 - 0.081168) / 7, **EXACT)


def test_mode_fused_runs_every_round_fused_on_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 6,
           "drafter_id": 0, "acceptance_seq": [1, 1, 0, 1, 1, 1]}  # fmt: skip
    result, policy = _run(tmp_path, monkeypatch, [row], [D2, D2], "mode=fused")
    # Round 0: the fused request carries the prompt, 80 B 0.01008; step = draft (prefill
    # 4: 9 ms, then 3 ms) 0.012 + verify (6 new) 0.011 → 0.03308; commits 3, down 80 B
    # → 0.04316. Round 1, queued at 0.03308: draft 0.006 + verify (3 new, 6 cached) 0.0086
    # → 0.04768; commits 3 (done), down → 0.05776.
    assert _rounds(result) == [
        (0, True, 0.0, *_at(0.04316, 0.012, 0.01008, 0.0, 0.011, 0.01008), 2, 2, 3),
        (1, True, *_at(0.03308, 0.05776, 0.006, 0.0, 0.0, 0.0086, 0.01008), 2, 2, 3),
    ]
    (a,) = result.requests
    assert a.first_token_s == T(0.04316, **EXACT) and a.finish_s == T(0.05776, **EXACT)
    assert a.network_s == T(3 * 0.01008, **EXACT) and a.draft_s == T(0.018, **EXACT)
    assert len(policy.seen) == 2  # the decisions' fused flag is ignored: every round fused


@pytest.mark.parametrize("colocated_ms", [2.0, 0.0])
def test_fused_drafting_delays_a_distributed_verification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, colocated_ms: float
) -> None:
    """b's block reaches the server while a's fused round is in its batch step: b waits
    for the co-located draft's passes too."""
    rows = [
        {"request_id": "b", "arrival_ms": 0.0, "prompt_tokens": 2, "output_tokens": 2,
         "drafter_id": 1, "acceptance_seq": [1]},
        {"request_id": "a", "arrival_ms": 15.0, "prompt_tokens": 4, "output_tokens": 3,
         "drafter_id": 0, "acceptance_seq": [1, 1, 1]},
    ]  # fmt: skip
    per_token_s, per_pass_s = colocated_ms / 1000, colocated_ms / 2000
    colocated = WispCoefficients(per_token_s, 0.0, 0.0, per_pass_s)
    result, policy = _run(tmp_path, monkeypatch, rows, [D2, F2], colocated=colocated)
    # a: fused request 80 B, at the server 0.025080; step = draft (prefill 4, then one
    # token: 0.009 + 0.003 with 2 ms/token) + verify (6 new) 0.011.
    draft = 2 * per_pass_s + 5 * per_token_s
    a_end = 0.02508 + draft + 0.011
    # b: γ = 1 (capped), prefill 2 = 0.02, uplink 76 B → at the server 0.030076, waits.
    a_round, b_round = sorted(result.rounds, key=lambda r: r.request_id)
    assert a_round.fused is True and a_round.draft_s == T(draft, **EXACT)
    assert a_round.verify_s == T(0.011, **EXACT)
    assert a_round.start_s == 0.015 and a_round.uplink_s == T(0.01008, **EXACT)
    assert b_round.fused is False
    assert b_round.queue_s == T(a_end - 0.030076, **EXACT)
    assert b_round.verify_s == T(0.008, **EXACT)  # 3 new tokens, alone
    assert draft == (0.012 if colocated_ms else 0.0)
    b = next(r for r in result.requests if r.request_id == "b")
    assert b.finish_s == T(a_end + 0.008 + 0.010076, **EXACT)  # commits 2: 76 B
    assert len(policy.seen) == 2  # one round each


def test_policy_consulted_once_per_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One device, two requests in turn: the consultations are the rounds, in order, and
    each observation reports the previous round of its request as it ran."""
    rows = [
        {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 14,
         "drafter_id": 0, "acceptance_seq": [1, 0, 1, 1, 0]},
        {"request_id": "b", "arrival_ms": 1.0, "prompt_tokens": 3, "output_tokens": 12,
         "drafter_id": 0, "acceptance_seq": [0, 1, 1]},
    ]  # fmt: skip
    script = [WindowDecision(1 + i % 3, i % 4 in (1, 2)) for i in range(40)]
    result, policy = _run(tmp_path, monkeypatch, rows, script)
    rounds = result.rounds
    assert [r.request_id for r in rounds] == sorted(r.request_id for r in rounds)  # in turn
    assert len(policy.seen) == len(rounds) == sum(r.num_rounds for r in result.requests)
    assert [r.fused for r in rounds] == [d.fused for d in script[: len(rounds)]]
    assert any(r.fused for r in rounds) and not all(r.fused for r in rounds)
    for previous, obs in zip([None, *rounds], policy.seen, strict=False):
        if previous is None or obs.previous_gamma == 0:  # a request's first round
            assert obs.recent_acceptance is None
            continue
        assert obs.previous_fused is previous.fused
        assert obs.last_num_accepted == previous.num_accepted


def test_tiny_scenario_switching_paths_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy that switches on its observations, over many sessions: the fast path, the
    policy path and every hop as its own event give identical records."""
    monkeypatch.setitem(registry.WINDOW, "switching", _Switching)
    base = ["policies.window.name=switching", "record_rounds=true"]
    fast = simulate(scenario_from_dict(tiny_scenario(), [*base, "fast_path=true"]))
    slow = simulate(scenario_from_dict(tiny_scenario(), [*base, "fast_path=false"]))
    hops = simulate(
        scenario_from_dict(tiny_scenario(), [*base, "fast_path=false"]), handlers="every_hop"
    )
    note = "; inbound refused: the window policy may go fused; round records"
    assert fast.path == "inlined (inlined: fcfs batching, jsq routing" + note + ")"
    assert slow.path == "reference (fast_path=false)"
    fused = sum(r.fused for r in fast.rounds)
    assert 50 < fused < fast.num_rounds - 50
    for other in (slow, hops):
        assert fast.requests == other.requests
        assert fast.batches == other.batches
        assert fast.rounds == other.rounds
    assert fast.num_events < slow.num_events < hops.num_events


@dataclass(frozen=True)
class _Switching:
    """Fused after a round that accepted nothing, else distributed γ = 3 (test-only)."""

    may_fuse: ClassVar[bool] = True

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        return WindowDecision(3, obs.last_num_accepted == 0)


@dataclass(frozen=True)
class _Undeclared:
    """Goes fused but does not say so (test-only)."""

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        return WindowDecision(2, obs.previous_gamma > 0)


def test_undeclared_fused_answer_on_the_distributed_only_path_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(registry.WINDOW, "undeclared", _Undeclared)
    overrides = ["policies.window.name=undeclared", "record_rounds=false"]
    with pytest.raises(PolicyContractError, match="give the policy a class attribute `may_fuse"):
        simulate(scenario_from_dict(tiny_scenario(), overrides))
    # with round records the generic BATCH_END runs it: fused rounds happen
    result = simulate(scenario_from_dict(tiny_scenario(), ["policies.window.name=undeclared",
                                                           "record_rounds=true"]))  # fmt: skip
    assert any(r.fused for r in result.rounds)
