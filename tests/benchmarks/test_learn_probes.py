"""benchmarks/probes/hybrid_rules.py and tree_bound.py (the offline AAL bounds docs/LEARN.md
quotes): their replay arithmetic on hand-built positions. The probes' model runs are not
run here (they load Gemma 3 270M)."""

from __future__ import annotations

from types import ModuleType

from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.learn.traces.records import replay_accepted_lengths
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
