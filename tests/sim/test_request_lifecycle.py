"""A request's life on its device and server, by hand (the engine's shared code: _start,
begin_round, _arrive, _deliver), on tests/sim/helpers.hand_trace_scenario's costs:
drafter 10 ms per forwarded token; server 5 ms + 1 ms per new token + 0.1 ms per cached
token; one way 10 ms + 1 µs per byte; uplink 64 + 4·(γ + prompt ids on a first round)
bytes, downlink 64 + 4·(1 + committed) bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import Tolerance, hand_trace_scenario

EXACT: Tolerance = {"abs": 1e-12}


def _row(
    request_id: str, arrival_ms: float, prompt: int, output: int, device: int
) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "arrival_ms": arrival_ms,
        "prompt_tokens": prompt,
        "output_tokens": output,
        "drafter_id": device,
        "acceptance_seq": [1] * output,
    }


@pytest.mark.parametrize("fast", [True, False])
def test_a_busy_device_takes_its_queued_requests_up_in_arrival_order(
    tmp_path: Path, fast: bool
) -> None:
    """Three requests for one device, 1 ms apart: the second and third wait, and are taken
    up first come, first served as each one's predecessor reaches the device."""
    rows = [_row("first", 0.0, 4, 2, 0), _row("second", 1.0, 2, 2, 0), _row("third", 2.0, 3, 2, 0)]
    result = simulate(
        scenario_from_dict(hand_trace_scenario(tmp_path, rows, gamma=1), [f"fast_path={fast}"])
    )
    # first: prefill 4 = 0.04; uplink 84 B 0.010084; 5 new tokens 0.010 → 0.060084;
    # accepts 1, commits 2 (done); downlink 76 B 0.010076 → 0.07016.
    # second, taken up at 0.07016: prefill 2 = 0.02; uplink 76 B → 0.100236; 3 new
    # 0.008 → 0.108236; downlink 76 B → 0.118312.
    # third, taken up at 0.118312: prefill 3 = 0.03; uplink 80 B → 0.158392; 4 new
    # 0.009 → 0.167392; downlink 76 B → 0.177468.
    got: list[tuple[object, ...]] = [
        (r.request_id, r.arrival_s, r.device_wait_s, r.finish_s) for r in result.requests
    ]
    assert got == [
        ("first", 0.0, 0.0, pytest.approx(0.07016, **EXACT)),
        ("second", 0.001, pytest.approx(0.06916, **EXACT), pytest.approx(0.118312, **EXACT)),
        ("third", 0.002, pytest.approx(0.116312, **EXACT), pytest.approx(0.177468, **EXACT)),
    ]
    assert [(r.num_rounds, r.num_output_tokens) for r in result.requests] == [(1, 2)] * 3


def test_blocks_arriving_together_at_an_idle_server_dispatch_once(tmp_path: Path) -> None:
    """Two identical requests on two devices reach the idle server at the same instant:
    one DISPATCH event batches both (the second arrival finds one pending)."""
    rows = [_row("a", 0.0, 4, 2, 0), _row("b", 0.0, 4, 2, 1)]
    data = hand_trace_scenario(tmp_path, rows, gamma=1)
    result = simulate(scenario_from_dict(data, ["fast_path=false"]))
    # 2 REQUEST, 2 ARRIVE, 1 DISPATCH, 1 BATCH_END, 2 DELIVER (both finish in one round)
    assert result.num_events == 8
    (batch,) = result.batches
    times: tuple[object, ...] = (batch.start_s, batch.end_s)
    assert times == (
        pytest.approx(0.050084, **EXACT),
        pytest.approx(0.065084, **EXACT),  # 10 new tokens: 0.005 + 0.010
    )
    assert (batch.batch_size, batch.num_new_tokens, batch.num_cached_tokens) == (2, 10, 0)


@pytest.mark.parametrize("fast", [True, False])
def test_pooled_acceptance_sequences_go_round_robin_by_session(tmp_path: Path, fast: bool) -> None:
    """Requests without an acceptance_seq of their own replay the pool's sequences in the
    order their sessions start: a (pool[0], all accepted), b (pool[1], all rejected), c
    (pool[0] again)."""
    pool = tmp_path / "pool.jsonl"
    pool.write_text(
        json.dumps({**_row("p0", 0.0, 1, 6, 0), "acceptance_seq": [1] * 6})
        + "\n"
        + json.dumps({**_row("p1", 0.0, 1, 6, 0), "acceptance_seq": [0] * 6})
        + "\n"
    )
    rows = [_row("a", 0.0, 4, 5, 0), _row("b", 1.0, 4, 5, 1), _row("c", 2.0, 4, 5, 0)]
    for row in rows:
        del row["acceptance_seq"]
    data = hand_trace_scenario(tmp_path, rows, gamma=2)
    data["acceptance"] = {"kind": "trace", "traces": [str(pool)]}
    result = simulate(scenario_from_dict(data, [f"fast_path={fast}"]))
    got = {r.request_id: (r.num_rounds, r.num_drafted, r.num_accepted) for r in result.requests}
    # all accepted: γ 2 commits 3, then γ min(2, 5 − 3 − 1) = 1 commits 2
    # all rejected: one token a round, γ 2, 2, 2, 1, 0
    assert got == {"a": (2, 3, 3), "b": (5, 7, 0), "c": (2, 3, 3)}


def test_a_perfect_stop_predictor_sends_exactly_the_accepted_tokens(tmp_path: Path) -> None:
    """With the confusion stand-in at TPR 1, FPR 0 the block stops at its first rejection,
    so every round's accepted count, drawn once while drafting (i.i.d. acceptance), is the
    number of tokens it sent; drawing again at the verdict would break that."""
    rows = [{k: v for k, v in _row("a", 0.0, 4, 60, 0).items() if k != "acceptance_seq"}]
    data = hand_trace_scenario(tmp_path, rows, gamma=4, duration_s=10.0)
    data["acceptance"] = {"kind": "iid", "alpha": 0.6}
    data["stop_predictor"] = {"confusion_tpr": 1.0, "confusion_fpr": 0.0}
    result = simulate(scenario_from_dict(data))
    rounds = result.rounds
    assert len(rounds) == 29
    assert all(r.num_accepted == r.num_drafted for r in rounds)
    assert all(r.num_committed == r.num_drafted + 1 for r in rounds)
    assert sorted({r.num_drafted for r in rounds}) == [0, 1, 2, 3, 4]  # not trivially full
    (request,) = result.requests
    assert (request.num_rounds, request.num_drafted, request.num_accepted) == (29, 31, 31)


@pytest.mark.parametrize("fast", [True, False])
def test_stochastic_verification_uplinks_the_draft_distributions(
    tmp_path: Path, fast: bool
) -> None:
    """temperature > 0: each distributed block also carries its γ draft distributions,
    γ × vocabulary fp16 values (2 bytes each), on top of the ids."""
    rows = [_row("a", 0.0, 4, 4, 0)]
    data = hand_trace_scenario(tmp_path, rows, gamma=2)
    result = simulate(scenario_from_dict(data, ["temperature=0.7", f"fast_path={fast}"]))
    vocab = 151_936  # qwen3-0.6b, the pool's default draft model
    first, second = result.rounds
    assert first.uplink_s == pytest.approx(
        0.010 + (64 + 4 * (2 + 4) + 2 * 2 * vocab) * 1e-6, **EXACT
    )
    # all accepted: 3 committed, then γ = min(2, 4 − 3 − 1) = 0: no ids, no distributions
    assert second.uplink_s == pytest.approx(0.010 + 64 * 1e-6, **EXACT)
