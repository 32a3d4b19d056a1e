"""Token trees: structure helpers and greedy tree verification."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.speculative import greedy_verify, greedy_verify_tree
from edgespec.core.tree import (
    ancestor_matrix,
    chain_parents,
    check_tree,
    is_chain,
    node_depths,
    parse_branching,
    path_to,
    tree_depth,
    tree_problem,
)

# root ─┬─ 0:a ─┬─ 2:c ── 4:e
#       │       └─ 3:d
#       └─ 1:b ──── 5:f
PARENTS = (-1, -1, 0, 0, 2, 1)
TOKENS = (10, 11, 12, 13, 14, 15)


def test_structure_helpers() -> None:
    assert node_depths(PARENTS) == (1, 1, 2, 2, 3, 2)
    assert tree_depth(PARENTS) == 3
    assert path_to(PARENTS, 4) == (0, 2, 4)
    assert path_to(PARENTS, -1) == ()
    assert chain_parents(3) == (-1, 0, 1)
    assert is_chain(chain_parents(4)) and not is_chain(PARENTS)
    allowed = ancestor_matrix(PARENTS)
    assert allowed[4].tolist() == [True, False, True, False, True, False]
    assert allowed[5].tolist() == [False, True, False, False, False, True]
    assert allowed[1].tolist() == [False, True, False, False, False, False]


@pytest.mark.parametrize(
    ("parents", "message"),
    [
        ((-1, 1), "node 1 has parent 1; it must be -1 or in 0..0"),
        ((0,), "node 0 has parent 0; it must be -1 (node 0 hangs off the newest committed token)"),
        ((-2,), "node 0 has parent -2"),
        ((-1,), "1 parents for 2 tokens"),
    ],
)
def test_bad_trees_are_named(parents: tuple[int, ...], message: str) -> None:
    problem = tree_problem(parents, 2 if message.startswith("1 parents") else len(parents))
    assert problem is not None and message in problem
    with pytest.raises(ValueError, match="draft tree"):
        check_tree(parents, len(parents) + (1 if message.startswith("1 parents") else 0))


def _argmax(root: int, after: dict[int, int]) -> list[int]:
    """target_argmax with ``root`` at the root and ``after[i]`` after node i (else 99)."""
    return [root] + [after.get(i, 99) for i in range(len(TOKENS))]


def test_walks_the_matching_branch_to_a_leaf() -> None:
    result, path = greedy_verify_tree(TOKENS, PARENTS, _argmax(10, {0: 12, 2: 14, 4: 77}))
    assert path == (0, 2, 4)
    assert result.accepted_token_ids == (10, 12, 14)
    assert result.extra_token == 77  # the bonus after the deepest node
    assert (result.num_drafted, result.num_accepted, result.first_rejection) == (3, 3, None)


def test_second_branch_and_early_stop() -> None:
    result, path = greedy_verify_tree(TOKENS, PARENTS, _argmax(11, {1: 40}))
    assert path == (1,)
    assert result.accepted_token_ids == (11,) and result.extra_token == 40
    assert result.first_rejection == 1
    result, path = greedy_verify_tree(TOKENS, PARENTS, _argmax(50, {}))
    assert path == () and result.extra_token == 50 and result.num_accepted == 0


def test_duplicate_siblings_take_the_first() -> None:
    _, path = greedy_verify_tree((7, 7, 8), (-1, -1, 1), [7, 8, 8, 9])
    assert path == (0,)  # node 0 has no child: node 1's child 8 is never reached


def test_a_chain_matches_greedy_verify() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        k = int(rng.integers(1, 6))
        draft = [int(t) for t in rng.integers(0, 3, size=k)]
        argmax = [int(t) for t in rng.integers(0, 3, size=k + 1)]
        result, path = greedy_verify_tree(draft, chain_parents(k), argmax)
        assert result == greedy_verify(draft, argmax)
        assert path == tuple(range(result.num_accepted))


def test_argmax_length_is_checked() -> None:
    with pytest.raises(ValueError, match="K\\+1=7 entries, got 6"):
        greedy_verify_tree(TOKENS, PARENTS, [0] * 6)


def test_too_many_parents_are_named() -> None:
    assert tree_problem((-1, 0), 1) == "draft tree has 2 parents for 1 tokens"


def test_parse_branching_refuses_an_empty_entry_and_needs_one() -> None:
    assert parse_branching(" 2, 1") == (2, 1)
    for text in ("2, 1,", " 3 ,, 1", "1,,2", ",2", " , "):
        with pytest.raises(ValueError) as refused:
            parse_branching(text)
        assert str(refused.value) == (
            f"tree branching has an empty entry in {text!r} (one integer per depth)"
        )
    with pytest.raises(ValueError, match="^tree branching needs integers >= 1, got ''$"):
        parse_branching("")


def test_an_empty_tree_has_depth_zero_and_verifies_like_an_empty_chain() -> None:
    assert tree_depth(()) == 0
    assert greedy_verify_tree((), (), [5]) == (greedy_verify([], [5]), ())
