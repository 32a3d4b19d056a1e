"""A sampled round's uplink (``temperature > 0``) carries the draft distributions as
``draft_probs`` says (edgespec.core.link_delay.draft_probs_row_bytes): ``dense``, the papers'
γ × V fp16; ``compact``, edgespec's gRPC rows, at most the scenario's ``top_k`` entries each.
Every round's uplink time, by hand, in the reference loop and the fast sets alike; a greedy
run sends none either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.hardware.presets import load_architecture
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import hand_trace_scenario

ROWS = [{"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 7,
         "drafter_id": 0, "acceptance_seq": [1, 1, 0, 1, 1, 1, 1]}]  # fmt: skip


def _uplinks(tmp_path: Path, overrides: list[str]) -> list[float]:
    data = hand_trace_scenario(tmp_path, ROWS, gamma=3, duration_s=10.0)
    result = simulate(scenario_from_dict(data, overrides))
    return [r.uplink_s for r in result.rounds]


@pytest.mark.parametrize("fast", [True, False])
def test_each_rounds_uplink_carries_its_rows_as_draft_probs_says(
    tmp_path: Path, fast: bool
) -> None:
    vocab = load_architecture("qwen3-0.6b").vocab_size  # the devices' draft model
    on = [f"fast_path={fast}", "temperature=0.8"]
    # rounds: 3 drafted with the prompt's 4 ids (2 accepted), then 3 (all, and the bonus);
    # RTT 20 ms, 1e6 B/s: 0.01 + (64 + 4 ids·(drafts + prompt) + drafts·row) / 1e6
    cases = [
        ("dense", [], 2 * vocab),
        ("compact", [], 2 + 1024 * (3 + 4)),  # the cap: 1,024 entries of a 3-byte id + f32
        ("compact", ["top_k=40"], 1 + 40 * (3 + 4)),  # a top-40 draft keeps 40 at most
        ("compact", ["top_k=5000", "top_p=0.9"], 2 + 1024 * (3 + 4)),  # the cap still holds
        ("dense", ["top_k=40"], 2 * vocab),  # a dense row is every token's, cut or not
    ]
    for wire, cuts, row in cases:
        uplinks = _uplinks(tmp_path, [*on, f"draft_probs={wire}", *cuts])
        expected = [0.01 + (64 + 4 * (d + p) + d * row) / 1e6 for d, p in ((3, 4), (3, 0))]
        assert uplinks == [pytest.approx(x, abs=1e-12) for x in expected]
    greedy = [0.01 + (64 + 4 * (d + p)) / 1e6 for d, p in ((3, 4), (3, 0))]
    for wire in ("dense", "compact"):
        uplinks = _uplinks(tmp_path, [f"fast_path={fast}", f"draft_probs={wire}", "top_k=40"])
        assert uplinks == [pytest.approx(x, abs=1e-12) for x in greedy]


SAMPLED_ROWS = [{**ROWS[0], "temperature": 0.8, "top_p": 0.9, "acceptance_prob": [0.5] * 7,
                 "draft_row_entries": [2, 3, 3, 2, 4, 3, 3]}]  # fmt: skip
"""A sampled capture at T = 0.8 with top-p 0.9: its draft rows kept 20 entries in 7 rows."""


@pytest.mark.parametrize("fast", [True, False])
def test_a_compact_row_is_charged_the_entries_a_capture_at_the_same_sampling_measured(
    tmp_path: Path, fast: bool
) -> None:
    """Top-p leaves a number of entries only a capture knows: its rows' mean (20 / 7,
    charged 3) where the scenario samples as it was captured; the cap (1,024) otherwise."""
    data = hand_trace_scenario(tmp_path, SAMPLED_ROWS, gamma=3, duration_s=10.0)
    on = [f"fast_path={fast}", "temperature=0.8", "draft_probs=compact"]
    cases = [(["top_p=0.9"], 1 + 3 * (3 + 4)), (["top_p=0.5"], 2 + 1024 * (3 + 4))]
    for cuts, row in cases:
        result = simulate(scenario_from_dict(data, [*on, *cuts]))
        uplinks = [r.uplink_s for r in result.rounds]
        expected = [0.01 + (64 + 4 * (d + p) + d * row) / 1e6 for d, p in ((3, 4), (3, 0))]
        assert uplinks == [pytest.approx(x, abs=1e-12) for x in expected]
