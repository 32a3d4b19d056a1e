"""A token-tree trace replays its captured rounds: nodes verified and sent (with a parent
each), one draft pass per depth, accepted lengths as captured; identical on both paths."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from edgespec.config import ConfigError
from edgespec.hardware.cost_models import decode_steps_s
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import hand_trace_scenario

# request a: depth 3 ("2,2,1"); rounds (nodes, accepted) commit 3 + 2 + 2 (cut at 7)
ROUNDS_A = [[5, 2, 9.0, 9.0], [3, 1, 9.0, 9.0], [6, 3, 9.0, 9.0]]
ROUNDS_B = [[4, 0, 9.0, 9.0], [7, 3, 9.0, 9.0], [0, 0, 0.0, 9.0]]  # last: an empty block


def _scenario(tmp_path: Path) -> dict[str, Any]:
    rows = [
        {"request_id": "a", "arrival_ms": 0.0, "prompt_tokens": 4, "output_tokens": 7,
         "drafter_id": 0, "acceptance_seq": [1, 1, 0, 1, 0, 1, 1], "draft_tree": "2,2,1",
         "rounds": ROUNDS_A},
        {"request_id": "b", "arrival_ms": 1.0, "prompt_tokens": 6, "output_tokens": 6,
         "drafter_id": 1, "acceptance_seq": [0, 1, 1, 1, 0, 0], "draft_tree": "2,2,1",
         "rounds": ROUNDS_B},
    ]  # fmt: skip
    return hand_trace_scenario(tmp_path, rows, gamma=3, duration_s=5.0)


def test_tree_rounds_replay_as_captured_on_both_paths(tmp_path: Path) -> None:
    data = _scenario(tmp_path)
    fast = simulate(scenario_from_dict(data, ["fast_path=true"]))
    slow = simulate(scenario_from_dict(data, ["fast_path=false"]))
    assert (fast.requests, fast.batches, fast.rounds) == (slow.requests, slow.batches, slow.rounds)
    by_request = {rid: [r for r in fast.rounds if r.request_id == rid] for rid in "ab"}
    for rid, captured in (("a", ROUNDS_A), ("b", ROUNDS_B)):
        rounds = by_request[rid]
        assert [(r.num_drafted, r.num_accepted) for r in rounds] == [
            (n, a) for n, a, *_ in captured
        ]
    assert [r.num_committed for r in by_request["a"]] == [3, 2, 2]  # cut at 7 output tokens
    assert [r.num_committed for r in by_request["b"]] == [1, 4, 1]
    a = min(fast.requests, key=lambda r: r.request_id)
    assert (a.num_rounds, a.num_drafted, a.num_accepted) == (3, 14, 6)  # AAL 2.0 as captured
    # uplink of a's second round: 64 B header + 3 ids + 3 parents, no jitter, 1e6 B/s
    assert by_request["a"][1].uplink_s == pytest.approx(0.010 + (64 + 4 * 3 + 4 * 3) * 1e-6)
    # b's empty last block: the header only, nothing drafted
    assert by_request["b"][2].uplink_s == pytest.approx(0.010 + 64 * 1e-6)
    assert by_request["b"][2].draft_s == 0.0


@pytest.mark.parametrize("fast", [True, False])
def test_a_sampled_tree_sends_its_nodes_without_draft_rows(tmp_path: Path, fast: bool) -> None:
    """Sampled (temperature 0.8, dense draft rows: 262,144 × 4 bytes a chain token), a tree
    round sends what a greedy one sends: its nodes are proposed for certain, no q rows."""
    data = _scenario(tmp_path)
    trace = Path(data["workload"]["trace"])
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    trace.write_text("".join(json.dumps({**row, "temperature": 0.8}) + "\n" for row in rows))
    data["temperature"] = 0.8
    sampled = simulate(scenario_from_dict(data, [f"fast_path={fast}"]))
    second = next(r for r in sampled.rounds if r.request_id == "a" and r.round_index == 1)
    assert (second.num_drafted, second.num_accepted) == (3, 1)
    assert second.uplink_s == pytest.approx(0.010 + (64 + 4 * 3 + 4 * 3) * 1e-6)


def test_draft_cost_is_one_pass_per_depth(tmp_path: Path) -> None:
    sim = simulate(scenario_from_dict(_scenario(tmp_path), ["fast_path=false"]))
    scenario = scenario_from_dict(_scenario(tmp_path))
    from tests.sim.parts import build_entities

    devices, _ = build_entities(scenario)
    cost = devices[0].draft_cost
    second = next(r for r in sim.rounds if r.request_id == "a" and r.round_index == 1)
    assert second.draft_s == decode_steps_s(cost, 3, 4 + 3, 0)  # depth 3, context 7


@pytest.mark.parametrize("fast", [True, False])
def test_tree_verification_tokens_are_the_nodes(tmp_path: Path, fast: bool) -> None:
    data = _scenario(tmp_path)
    trace = Path(data["workload"]["trace"])
    trace.write_text(trace.read_text().splitlines()[0] + "\n")  # request a alone
    sim = simulate(scenario_from_dict(data, [f"fast_path={fast}"]))
    shapes = [(b.num_new_tokens, b.num_cached_tokens) for b in sim.batches]
    # cold start: prompt 4 + 5 nodes; then the last committed token + the round's nodes
    assert shapes == [(4 + 5, 0), (1 + 3, 4 + 3 - 1), (1 + 6, 4 + 5 - 1)]


def test_bad_tree_rounds_and_tree_pools_are_refused(tmp_path: Path) -> None:
    data = _scenario(tmp_path)
    trace = Path(data["workload"]["trace"])
    good = trace.read_text()
    trace.write_text(good.replace("[6, 3, 9.0, 9.0]", "[2, 3, 9.0, 9.0]"))
    with pytest.raises(ConfigError, match=r"rounds\[2\].*0 <= accepted <= min\(nodes, passes\)"):
        simulate(scenario_from_dict(data))
    trace.write_text(good.replace("[6, 3, 9.0, 9.0]]", "[1, 0, 9.0, 9.0]]"))
    with pytest.raises(ConfigError, match="commit 6 tokens, fewer than 7 output tokens"):
        simulate(scenario_from_dict(data))
    # a round with no nodes while 2+ tokens are left cannot be captured (a tree has at least
    # one node until the budget's last token); b's last round, 1 token left, is one
    no_nodes = "verifies no nodes with {} tokens left to generate: a tree round drafts at "
    no_nodes += "least one node until the budget's last token"
    trace.write_text(good.replace("[[5, 2, 9.0, 9.0]", "[[0, 0, 9.0, 9.0]"))
    with pytest.raises(ConfigError, match=re.escape("rounds[0]: " + no_nodes.format(7))):
        simulate(scenario_from_dict(data))
    trace.write_text(good.replace("[3, 1, 9.0, 9.0]", "[0, 0, 9.0, 9.0]"))
    with pytest.raises(ConfigError, match=re.escape("rounds[1]: " + no_nodes.format(4))):
        simulate(scenario_from_dict(data))
    trace.write_text(good)
    pooled = {**data, "acceptance": {"kind": "trace", "traces": [str(trace)]}}
    pooled["workload"] = {"kind": "closed_loop", "prompt_tokens": [4], "output_tokens": [6]}
    with pytest.raises(ConfigError, match="replays its captured rounds only as the workload"):
        simulate(scenario_from_dict(pooled))
