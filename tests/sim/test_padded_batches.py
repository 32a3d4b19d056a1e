"""``batch_pricing: padded`` in the simulator (edgespec.hardware.batch_pricing): a
hand-built batch priced padded and summed, length-aware batching (LAB) against FCFS under
each pricing, and the field's validation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.config import ConfigError
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import SimResult, simulate
from tests.sim.helpers import hand_trace_scenario, tiny_scenario

HAND_ROWS = [
    {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 100, "output_tokens": 3,
     "drafter_id": 0, "acceptance_seq": [1, 1, 1]},
    {"request_id": "b", "arrival_ms": 1000.0, "prompt_tokens": 4, "output_tokens": 3,
     "drafter_id": 1, "acceptance_seq": [1, 1, 1]},
    {"request_id": "c", "arrival_ms": 1000.0, "prompt_tokens": 10, "output_tokens": 3,
     "drafter_id": 2, "acceptance_seq": [1, 1, 1]},
]  # fmt: skip
"""``a`` keeps the server busy while ``b`` and ``c`` arrive; they are verified together."""


def _hand_run(tmp_path: Path, pricing: str) -> SimResult:
    data = hand_trace_scenario(tmp_path, HAND_ROWS, gamma=2, duration_s=5.0)
    data["auto_topology"]["devices"][0]["count"] = 3
    data["auto_topology"]["servers"][0]["batch_pricing"] = pricing
    return simulate(scenario_from_dict(data, []))


def test_a_hand_built_batch_costs_its_pad_rows(tmp_path: Path) -> None:
    """Server: 5 ms + 1 ms per new token (+ 0.1 ms per cached token, none here). ``b`` and
    ``c`` verify their prompts and 2 drafts: 4 + 2 = 6 and 10 + 2 = 12 new tokens. Summed:
    5 + 18 = 23 ms; padded to the longest block: 5 + 2·12 = 29 ms, 6 ms more."""
    summed, padded = _hand_run(tmp_path, "summed"), _hand_run(tmp_path, "padded")
    assert [(b.batch_size, b.num_new_tokens) for b in summed.batches] == [(1, 102), (2, 18)]
    (a_s, pair_s), (a_p, pair_p) = summed.batches, padded.batches
    assert a_p == a_s  # one entry: nothing to pad
    assert pair_p.start_s == pair_s.start_s
    assert pair_s.end_s - pair_s.start_s == pytest.approx(0.023, abs=1e-12)
    assert pair_p.end_s - pair_p.start_s == pytest.approx(0.029, abs=1e-12)
    assert (pair_p.num_new_tokens, pair_p.num_cached_tokens) == (18, 0)  # real tokens kept


def _mixed_lengths(batching: dict[str, Any], pricing: str) -> SimResult:
    """One server (batch ≤ 8) under 24 closed-loop devices whose prompts are 40 or 2,000
    tokens long: a FCFS batch mixes both lengths."""
    data = tiny_scenario()
    data["auto_topology"]["devices"][0]["count"] = 24
    data["auto_topology"]["servers"][0].update(
        count=1, max_batch_size=8, max_batch_tokens=4096, kv_budget_tokens=200_000,
        batch_pricing=pricing,
    )  # fmt: skip
    data["links"]["wan"].update(loss_rate=0.0, jitter_ms=0.0)
    data["workload"].update(prompt_tokens=[40, 2000], output_tokens=[60, 60], think_time_s=0.2)
    data["policies"]["batching"] = batching
    data["policies"]["window"] = {"name": "static", "params": {"gamma": 4}}
    return simulate(scenario_from_dict(data, []))


def _rounds_per_busy_s(result: SimResult) -> float:
    """Verifications per second the target spends verifying."""
    return result.num_rounds / sum(b.end_s - b.start_s for b in result.batches)


LAB = {"name": "lab", "params": {"max_length_ratio": 1.5}}
FCFS = {"name": "fcfs"}


def test_lab_saves_target_time_under_padded_pricing_only() -> None:
    """Padded, a FCFS batch pads its 40-token rows to 2,000 tokens; LAB keeps lengths
    apart and verifies more than twice as many rounds per busy second. Summed, grouping
    saves nothing: LAB's smaller batches verify no more per second than FCFS's."""
    padded = {b["name"]: _rounds_per_busy_s(_mixed_lengths(b, "padded")) for b in (LAB, FCFS)}
    summed = {b["name"]: _rounds_per_busy_s(_mixed_lengths(b, "summed")) for b in (LAB, FCFS)}
    assert padded["lab"] > 2.0 * padded["fcfs"]
    assert summed["lab"] <= summed["fcfs"]
    assert padded["lab"] / padded["fcfs"] > summed["lab"] / summed["fcfs"]


def test_batch_pricing_names_its_field() -> None:
    with pytest.raises(ConfigError) as error:
        scenario_from_dict(tiny_scenario(), ["auto_topology.servers.0.batch_pricing=ragged"])
    assert str(error.value) == (
        "config field 'auto_topology.servers[0].batch_pricing': must be one of "
        "['summed', 'padded'], got 'ragged'"
    )
