"""benchmarks/probes/hybrid_rules.py and tree_bound.py (the offline AAL bounds docs/LEARN.md
quotes): their replay arithmetic on hand-built positions. The probes' model runs are not
run here (they load Gemma 3 270M)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.learn.traces.replay import replay_accepted_lengths
from tests.benchmarks.scripts import load_script


def _load(name: str) -> ModuleType:
    return load_script(f"probes/{name}.py", name)  # tree_bound imports hybrid_rules by name


HYBRID = _load("hybrid_rules")
TREE = _load("tree_bound")


def test_match_length_is_the_longest_earlier_suffix() -> None:
    assert HYBRID.match_length([1, 2, 3, 1, 2, 3], 8, 2) == 3
    assert HYBRID.match_length([1, 2, 3, 1, 2, 3], 2, 2) == 2
    assert HYBRID.match_length([5, 6, 7, 8], 8, 2) == 0  # nothing repeats
    assert HYBRID.match_length([4, 9, 4], 8, 2) == 0  # a single token is below min_ngram


def test_score_replays_budget_capped_rounds() -> None:
    # rounds at 0 (4 accepted: the window), then at 5 (1: the output ends): AAL 2.5; 5 of 6
    assert HYBRID.score([[1, 1, 1, 1, 0, 1]]) == "2.50/0.83"
    # a rejection at position 1: rounds at 0 (1), 2 (4: the window), 7 (0)
    assert HYBRID.score([[1, 0, 1, 1, 1, 1, 1, 0]]) == "1.67/0.75"


def test_confident_draft_prefers_lookup_below_the_threshold() -> None:
    pick = HYBRID.confident_draft(0.7)
    assert pick((10, 11, 0.9, 12, 13, 2)) == 11  # confident draft
    assert pick((10, 11, 0.6, 12, 13, 2)) == 12  # lookup
    assert pick((10, 11, 0.1, None, None, 0)) == 11  # no lookup: the draft


def test_tree_rounds_accept_a_depth_when_the_token_survives() -> None:
    # target token, the draft's top-4 there, the lookup proposal
    seq = [(1, (1, 9, 9, 9), None), (2, (7, 2, 9, 9), 2), (3, (3, 9, 9, 9), 5)]
    seq += [(4, (4, 9, 9, 9), None), (5, (9, 9, 9, 9), None), (6, (6, 9, 9, 9), None)]
    # a chain stops at depth 1 (2 is the draft's second choice); next round from 2
    assert TREE.accepted_lengths(seq, (1, 1, 1, 1), False) == [1, 2, 1]
    # two branches at the second depth keep it; position 4 stops the round at 4
    assert TREE.accepted_lengths(seq, (1, 2, 1, 1), False) == [4, 1]
    # two at the first depth only: depth 2 of the first round is the chain's
    assert TREE.accepted_lengths(seq, (2, 1, 1, 1), False) == [1, 2, 1]
    # a lookup chain counts only while it has matched from the round's start
    assert TREE.accepted_lengths(seq, (1, 1, 1, 1), True) == [1, 2, 1]
    carried: list[tuple[int, tuple[int, ...], int | None]] = [(2, (7, 9, 9, 9), 2)]
    carried += [(3, (3, 9, 9, 9), 3), (4, (9, 9, 9, 9), 4)]
    carried.append((5, (9, 9, 9, 9), None))
    assert TREE.accepted_lengths(carried, (1, 1, 1, 1), True) == [3]
    assert TREE.accepted_lengths(carried, (1, 1, 1, 1), False) == [0, 1, 0]


def test_tree_node_counts() -> None:
    assert TREE.nodes((1, 1, 1, 1), False) == 4
    assert TREE.nodes((2, 2, 1, 1), False) == 2 + 4 + 4 + 4
    assert TREE.nodes((3, 3, 2, 1), True) == 3 + 9 + 18 + 18 + 4


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.lists(st.booleans(), min_size=1, max_size=64))
def test_a_chain_tree_replays_as_the_runtime_drafts(flags: list[bool]) -> None:
    """Without lookup, the (1, 1, 1, 1) tree is the draft's chain: its rounds are the
    budget-capped replay's (the runtime drafts nothing past the 64-token budget)."""
    seq = [(1, (1 if ok else 2, 9, 9, 9), None) for ok in flags]
    expected = replay_accepted_lengths([int(ok) for ok in flags], 4, TREE.NEW_TOKENS)
    assert TREE.accepted_lengths(seq, (1, 1, 1, 1), False) == expected


def test_the_last_token_is_never_drafted() -> None:
    flags = [True] * 64
    flags[62] = False  # the round at 60 stops at 62; the next starts at 63, the last token
    seq = [(1, (1 if ok else 2, 9, 9, 9), None) for ok in flags]
    assert TREE.accepted_lengths(seq, (1, 1, 1, 1), False) == [4] * 12 + [2, 0]


# (target, draft, conf, lookup(4,2), lookup(8,2), match length): two requests of one dataset
_REQUESTS = [
    [(1, 1, 0.9, None, None, 0), (2, 5, 0.4, 2, 2, 2), (3, 3, 0.8, 4, 3, 4)],
    [(7, 7, 0.9, None, 7, 3), (8, 9, 0.2, None, None, 0)],
]


def test_rule_results_hold_every_printed_cell() -> None:
    results = HYBRID.rule_results({"gsm8k": _REQUESTS, "cnndm": _REQUESTS[1:]})
    assert list(results) == list(HYBRID.RULES)
    # the draft: [1, 0, 1], rounds of 1 and 1, and [1, 0], one round of 1 (then the output ends)
    assert results["draft"]["gsm8k"] == {"aal": 1.0, "acceptance": 0.6}
    assert results["draft"]["cnndm"] == {"aal": 1.0, "acceptance": 0.5}
    # lookup(8) first: [1, 1, 1], one round of 3, and [1, 0], one of 1
    assert results["hybrid, max n-gram 8"]["gsm8k"] == {"aal": 2.0, "acceptance": 0.8}
    assert results["draft"]["all"] == HYBRID.acceptance([[1, 0, 1], [1, 0], [1, 0]])
    assert HYBRID.cell_text(results["lookup"]["gsm8k"]) == "0.25/0.20"  # [0, 1, 0], [0, 0]


def test_vocabulary_gaps_count_the_tokens_no_rule_reaches() -> None:
    gaps = HYBRID.vocabulary_gaps({"gsm8k": _REQUESTS}, {1, 3, 7})
    # 2 and 8 lie outside; lookup(8) proposes 2, so only 8 is unreachable
    assert gaps == {"gsm8k": {"outside": 0.4, "unreachable": 0.2}}


def test_the_arguments_keep_the_documented_positions(tmp_path: Path) -> None:
    parser = HYBRID.arguments("test")
    defaults = parser.parse_args([])
    assert (defaults.prompts, defaults.threads, defaults.json) == (6, 2, None)
    assert HYBRID.setting(defaults) == {
        "draft": "edgespec/data/drafts/gemma3-270m-draft",
        "prompts_per_dataset": 6,
        "new_tokens": 64,
    }
    args = parser.parse_args(["runs/d", "3", "1", "--json", str(tmp_path / "x.json")])
    assert (args.draft_dir, args.prompts, args.threads) == (Path("runs/d"), 3, 1)
    assert args.json == tmp_path / "x.json"


def test_a_tree_row_holds_its_nodes_and_every_printed_aal() -> None:
    accepted = [(1, (9, 1, 9, 9), None), (2, (2, 7, 9, 9), 2), (3, (3, 9, 9, 9), 5)]
    rejected = [(4, (9, 9, 9, 9), None), (5, (5, 9, 9, 9), None)]
    row = TREE.tree_row({"gsm8k": [accepted], "cnndm": [rejected]}, (2, 1, 1, 1), False)
    # gsm8k: one round of 3 (1 is the draft's second choice); cnndm: rounds of 0 and 1
    assert row == {
        "shape": [2, 1, 1, 1],
        "lookup": False,
        "nodes": 8,
        "aal": {"gsm8k": 3.0, "cnndm": 0.5, "all": 4 / 3},
    }
    assert TREE.row_text(row) == "(2, 1, 1, 1): 8 nodes; gsm8k 3.00  cnndm 0.50  all 1.33"
    assert TREE.row_text({**row, "lookup": True}).startswith("(2, 1, 1, 1) + lookup: 8 nodes;")
