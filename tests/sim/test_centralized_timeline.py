"""``mode: centralized`` by hand (tests/sim/helpers.hand_trace_scenario's costs): the
device sends the prompt once, the server decodes one token per round back to back
(continuous batching), and the downlink carries the first token and the last one; the
rounds in between never wait for the network."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import Tolerance, hand_trace_scenario

EXACT: Tolerance = {"abs": 1e-12}


@pytest.mark.parametrize("fast", [True, False])
def test_every_timestamp_of_a_centralized_request(tmp_path: Path, fast: bool) -> None:
    rows = [{"request_id": "c", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 3,
             "drafter_id": 0, "acceptance_seq": [1, 1, 1]}]  # fmt: skip
    data = hand_trace_scenario(tmp_path, rows, gamma=2)
    result = simulate(scenario_from_dict(data, ["mode=centralized", f"fast_path={fast}"]))
    # Round 0: the prompt up, 64 + 4·4 = 80 B 0.01008; prefill 4 new: 0.009 → 0.01908;
    # 1 token down, 72 B 0.010072 → first token at 0.029152.
    # Round 1 at once at 0.01908: nothing up; 1 new, 4 cached: 0.0064 → 0.02548; no
    # downlink in between. Round 2 at 0.02548: 1 new, 5 cached: 0.0065 → 0.03198; the
    # last token down, 72 B → 0.042052.
    rounds: list[tuple[object, ...]] = [
        (r.round_index, r.start_s, r.end_s, r.draft_s, r.uplink_s, r.queue_s, r.verify_s,
         r.downlink_s, r.num_drafted, r.num_committed)
        for r in result.rounds
    ]  # fmt: skip
    t = [pytest.approx(x, **EXACT) for x in (0.01008, 0.009, 0.010072, 0.01908, 0.02548)]
    assert rounds == [
        (0, 0.0, t[3], 0.0, t[0], 0.0, t[1], t[2], 0, 1),
        (1, t[3], t[4], 0.0, 0.0, 0.0, pytest.approx(0.0064, **EXACT), 0.0, 0, 1),
        (2, t[4], pytest.approx(0.03198, **EXACT), 0.0, 0.0, 0.0,
         pytest.approx(0.0065, **EXACT), t[2], 0, 1),
    ]  # fmt: skip
    (request,) = result.requests
    assert request.first_token_s == pytest.approx(0.029152, **EXACT)
    assert request.finish_s == pytest.approx(0.042052, **EXACT)
    assert request.network_s == pytest.approx(0.01008 + 2 * 0.010072, **EXACT)
    assert request.verify_s == pytest.approx(0.009 + 0.0064 + 0.0065, **EXACT)
    assert (request.num_rounds, request.num_drafted, request.num_output_tokens) == (3, 0, 3)
    shapes: list[tuple[object, ...]] = [
        (b.start_s, b.num_new_tokens, b.num_cached_tokens) for b in result.batches
    ]
    assert shapes == [(t[0], 4, 0), (t[3], 1, 4), (t[4], 1, 5)]
