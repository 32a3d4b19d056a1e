"""A server that prefills in parts (``prefill_part_tokens``): no batch forwards a
long prompt whole, every request still finishes, the fast handler sets refuse the run (the
reference round takes it), and a bad value is refused at its field."""

from __future__ import annotations

import pytest

from edgespec.config import ConfigError
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import SimResult, simulate
from tests.sim.helpers import tiny_scenario

PARTS = "auto_topology.servers.0.prefill_part_tokens"


def _run(*overrides: str) -> SimResult:
    return simulate(scenario_from_dict(tiny_scenario(), list(overrides)))


def test_no_batch_forwards_more_than_its_entries_parts_and_every_request_finishes() -> None:
    whole, parted = _run(), _run(f"{PARTS}=32")
    assert max(b.num_new_tokens for b in whole.batches) >= 300  # the longest prompt, whole
    # an entry forwards at most 32 tokens, or (its last pass) its newest token and its draft
    assert max(b.num_new_tokens / b.batch_size for b in parted.batches) <= 32
    assert parted.path.startswith("reference (inlining refused: ")
    assert "a server prefills in parts (prefill_part_tokens)" in parted.path
    done = [r for r in parted.requests if r.num_output_tokens]
    assert len(done) > 0 and len(parted.batches) > len(whole.batches)
    tokens = sum(r.num_prompt_tokens for r in parted.requests)
    assert sum(b.num_new_tokens for b in parted.batches) > tokens  # every prompt forwarded


def test_a_part_size_below_one_is_refused_at_its_field() -> None:
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(tiny_scenario(), [f"{PARTS}=0"])
    assert str(info.value) == (
        "config field 'auto_topology.servers[0].prefill_part_tokens': must be >= 1 or null, got 0"
    )


def _burst(batching: str) -> SimResult:
    """8 devices at once, on one server whose batch two 32-token parts fill: half the
    prompts 400 tokens (13 parts each), half 16 (one pass, then decoding)."""
    data = tiny_scenario()
    data["auto_topology"]["devices"][0]["count"] = 8
    data["auto_topology"]["servers"][0].update(
        count=1, max_batch_size=2, max_batch_tokens=64, prefill_part_tokens=32
    )
    data["workload"] = {
        "kind": "closed_loop",
        "prompt_tokens": [400, 16],
        "output_tokens": [40, 40],
        "think_time_s": 0.5,
    }
    return simulate(
        scenario_from_dict(data, ["duration_s=10", f"policies.batching.name={batching}"])
    )


def _first_token_s(result: SimResult, prompt_tokens: int) -> float:
    done = [r for r in result.requests if r.num_prompt_tokens == prompt_tokens and r.finish_s]
    assert len(done) >= 4
    return sum(r.first_token_s - r.arrival_s for r in done) / len(done)


def test_decodes_first_keeps_short_sessions_going_while_long_prompts_fill_the_batches() -> None:
    """Under FCFS the long prompts' parts keep their arrival, so two of them fill each
    batch and the short sessions' rounds wait for the prefills; ``decodes-first`` puts the
    short rounds right after the oldest entry: their first tokens come in under half the
    time, the long prompts' later (the same simulated work, shared otherwise)."""
    fcfs, first = _burst("fcfs"), _burst("decodes-first")
    assert _first_token_s(first, 16) < 0.6 * _first_token_s(fcfs, 16)
    assert _first_token_s(first, 400) > _first_token_s(fcfs, 400)
    assert first.batches != fcfs.batches


def test_a_prefill_parts_passes_are_verification_not_queueing() -> None:
    """One device alone on its server, so that no block ever waits for another: every
    round's queue_s is 0 and its verify_s is the sum of its passes' times (the parts' and
    the last), as the real server's scheduler counts them (``parts_s``); a 400-token prompt
    in 32-token parts takes 13 passes. The request records sum the rounds'."""
    data = tiny_scenario()
    data["auto_topology"]["devices"][0]["count"] = 1
    data["auto_topology"]["servers"][0].update(count=1, max_batch_tokens=64)
    data["workload"] = {"kind": "closed_loop", "prompt_tokens": [400], "output_tokens": [20],
                        "think_time_s": 0.5}  # fmt: skip
    result = simulate(
        scenario_from_dict(data, ["duration_s=5", f"{PARTS}=32", "record_rounds=true"])
    )
    firsts = [r for r in result.rounds if r.round_index == 0]
    assert len(firsts) >= 2 and len(result.rounds) > len(firsts)
    batches = sorted(result.batches, key=lambda b: b.start_s)
    for r in result.rounds:
        assert r.queue_s == pytest.approx(0.0, abs=1e-12)
        done_s = r.end_s - r.downlink_s  # the verdict's time (its last pass's end)
        passes = [b for b in batches if r.start_s + r.draft_s <= b.start_s and b.end_s <= done_s]
        assert len(passes) == (13 if r.round_index == 0 else 1)
        assert r.verify_s == pytest.approx(sum(b.end_s - b.start_s for b in passes), abs=1e-12)
    for request in result.requests:
        mine = [r for r in result.rounds if r.request_id == request.request_id]
        assert request.queue_s == pytest.approx(0.0, abs=1e-9)
        assert request.verify_s == pytest.approx(sum(r.verify_s for r in mine), abs=1e-9)
