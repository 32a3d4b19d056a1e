"""Two devices, one server, a two-request trace: every timestamp computed by hand.

Costs: drafter = 10 ms per forwarded token (WISP form a=0.01, rest 0); server = 5 ms +
1 ms per new token + 0.1 ms per cached token. Link: RTT 20 ms (10 ms one way), no
jitter or loss, 8 Mbit/s = 1e6 bytes/s, so a message of B bytes takes 0.010 + B·1e-6 s.
Messages: uplink 64 + 4·(γ + prompt ids on the first round) bytes, downlink
64 + 4·(1 + committed) bytes. γ = 2 (static), capped at remaining − 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import Tolerance, hand_trace_scenario

T = pytest.approx  # absolute tolerance set per call


def _scenario(tmp_path: Path) -> dict[str, object]:
    rows = [
        {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 4,
         "drafter_id": 0, "acceptance_seq": [1, 1, 0, 1]},
        {"request_id": "b", "arrival_ms": 5.0, "prompt_tokens": 2, "output_tokens": 3,
         "drafter_id": 1, "acceptance_seq": [0, 1, 1]},
    ]  # fmt: skip
    return hand_trace_scenario(tmp_path, rows, gamma=2)


@pytest.mark.parametrize("fast", [True, False])
def test_every_timestamp_of_a_two_device_trace(tmp_path: Path, fast: bool) -> None:
    result = simulate(scenario_from_dict(_scenario(tmp_path), [f"fast_path={fast}"]))
    exact: Tolerance = {"abs": 1e-12}
    # b (device 1): arrives 5 ms; drafts γ=2 after a 2-token prefill: 0.02 + 0.01 = 0.03;
    # uplink 80 B → 0.01008; at the server 0.04508, verified alone: 4 new tokens,
    # 0.005 + 0.004 = 0.009 → 0.05408; accepts 0 (seq[0] = 0), commits 1.
    # a (device 0): prefill 4 + 1 step = 0.05; uplink 88 B → 0.010088; arrives 0.060088,
    # server idle: 6 new tokens, 0.011 → 0.071088; accepts 2 (seq [1, 1]), commits 3.
    # b round 2 at 0.064152 (downlink 72 B = 0.010072): γ = min(2, 3 − 1 − 1) = 1, 1 step
    # 0.01, uplink 68 B 0.010068 → arrives 0.08422; cached 2, new 2 (1 bonus + 1 draft):
    # 0.005 + 0.002 + 0.0002 = 0.0072 → 0.09142; accepts 1 (seq[1] = 1), commits 2: done.
    # a round 2 at 0.081168 (downlink 80 B): γ = 0, no drafting, uplink 64 B 0.010064 →
    # arrives 0.091232, waits for the busy server until 0.09142; cached 6, new 1:
    # 0.005 + 0.001 + 0.0006 = 0.0066 → 0.09802; commits 1: done.
    batches: list[tuple[object, ...]] = [
        (b.start_s, b.end_s, b.batch_size, b.num_new_tokens, b.num_cached_tokens)
        for b in result.batches
    ]
    assert batches == [
        (T(0.04508, **exact), T(0.05408, **exact), 1, 4, 0),
        (T(0.060088, **exact), T(0.071088, **exact), 1, 6, 0),
        (T(0.08422, **exact), T(0.09142, **exact), 1, 2, 2),
        (T(0.09142, **exact), T(0.09802, **exact), 1, 1, 6),
    ]
    b, a = result.requests  # in finishing order
    assert b.request_id == "b" and b.arrival_s == T(0.005, **exact)
    assert b.first_token_s == T(0.064152, **exact)
    assert b.finish_s == T(0.09142 + 0.010076, **exact)
    assert (b.num_rounds, b.num_drafted, b.num_accepted, b.num_output_tokens) == (2, 3, 1, 3)
    assert b.draft_s == T(0.04, **exact) and b.verify_s == T(0.0162, **exact)
    assert b.queue_s == T(0.0, **exact)
    assert b.network_s == T(0.01008 + 0.010072 + 0.010068 + 0.010076, **exact)
    assert a.request_id == "a" and a.arrival_s == 0.0
    assert a.first_token_s == T(0.081168, **exact)
    assert a.finish_s == T(0.09802 + 0.010072, **exact)
    assert (a.num_rounds, a.num_drafted, a.num_accepted, a.num_output_tokens) == (2, 2, 2, 4)
    assert a.queue_s == T(0.09142 - 0.091232, **exact) and a.verify_s == T(0.0176, **exact)
    assert a.draft_s == T(0.05, **exact)
    assert a.network_s == T(0.010088 + 0.01008 + 0.010064 + 0.010072, **exact)
    rounds: list[tuple[object, ...]] = [
        (r.request_id, r.round_index, r.start_s, r.end_s, r.num_drafted, r.num_accepted,
         r.num_committed) for r in result.rounds
    ]  # fmt: skip
    assert rounds == [
        ("b", 0, T(0.005, **exact), T(0.064152, **exact), 2, 0, 1),
        ("a", 0, 0.0, T(0.081168, **exact), 2, 2, 3),
        ("b", 1, T(0.064152, **exact), T(0.101496, **exact), 1, 1, 2),
        ("a", 1, T(0.081168, **exact), T(0.108092, **exact), 0, 0, 1),
    ]
    assert result.num_rounds == 4


@pytest.mark.parametrize("fast", [True, False])
def test_a_request_that_waits_for_its_busy_device(tmp_path: Path, fast: bool) -> None:
    """One device, two requests 1 ms apart: the second starts when the first's last token
    reaches the device. TTFT counts that wait, the service TTFT (DSD-Sim's) does not."""
    rows = [
        {"request_id": "first", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 4,
         "drafter_id": 0, "acceptance_seq": [1, 1, 0, 1]},
        {"request_id": "second", "arrival_ms": 1.0, "prompt_tokens": 2, "output_tokens": 3,
         "drafter_id": 0, "acceptance_seq": [0, 1, 1]},
    ]  # fmt: skip
    data = hand_trace_scenario(tmp_path, rows, gamma=2)
    result = simulate(scenario_from_dict(data, [f"fast_path={fast}"]))
    first, second = result.requests
    assert (first.request_id, first.device_wait_s) == ("first", 0.0)
    assert first.service_ttft_s == first.ttft_s
    assert second.device_wait_s == T(first.finish_s - 0.001, abs=1e-15)
    assert second.first_token_s > first.finish_s
    assert second.service_ttft_s == T(second.first_token_s - first.finish_s, abs=1e-15)
    assert second.ttft_s == T(second.first_token_s - 0.001, abs=1e-15)
    m = simulate(scenario_from_dict(data, [f"fast_path={fast}"]), keep_records=False).metrics
    assert m is not None and m.ttft is not None and m.service_ttft is not None
    assert m.service_ttft.mean_s == T((first.ttft_s + second.service_ttft_s) / 2, abs=1e-15)
    assert m.ttft.mean_s - m.service_ttft.mean_s == T(second.device_wait_s / 2, abs=1e-15)
