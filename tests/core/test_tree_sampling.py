"""Speculative sampling of a token tree whose nodes are proposed for certain
(:func:`edgespec.core.speculative.stochastic_verify_tree`): hand-built draws, a chain drawn
as :func:`stochastic_verify` draws it with one-hot rows, and the committed tokens
distributed as the target's rows say."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.stats import chisquare

from edgespec.core.speculative import (
    DenseDrawn,
    stochastic_verify,
    stochastic_verify_tree,
)


class Draws:
    """A stand-in for ``np.random.Generator`` whose ``random()`` returns set numbers."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


ROOT = [0.5, 0.3, 0.2, 0.0]  # the target's row after the prefix, over 4 tokens
AFTER_1 = [0.1, 0.1, 0.1, 0.7]  # after node 1 (token 1)
LEAF = [0.25, 0.25, 0.25, 0.25]


def _rows(*rows: list[float]) -> DenseDrawn:
    return DenseDrawn(np.array(rows, dtype=np.float64))


def test_each_child_is_tried_against_what_the_rejected_leave() -> None:
    # nodes: 0 = token 0 and 1 = token 1 under the root, 2 = token 3 under node 1
    tokens, parents = (0, 1, 3), (-1, -1, 1)
    rows = _rows(ROOT, [0.0, 0.0, 1.0, 0.0], AFTER_1, LEAF)
    # token 0 rejected (0.6 >= 0.5); token 1 then has 0.3 of the 0.5 left: 0.55 < 0.6
    # accepts it; token 3 under it: 0.69 < 0.7 accepts; node 2 is a leaf: the bonus is
    # drawn from its row (0.6 of the CDF: token 2)
    result, path = stochastic_verify_tree(tokens, parents, rows, Draws(0.6, 0.55, 0.69, 0.6))  # type: ignore[arg-type]
    assert path == (1, 2)
    assert (result.num_accepted, result.first_rejection, result.num_drafted) == (2, None, 2)
    assert (result.accepted_token_ids, result.extra_token) == ((1, 3), 2)


def test_when_every_child_is_rejected_the_extra_token_is_drawn_from_the_rest() -> None:
    tokens, parents = (0, 1, 3), (-1, -1, 1)
    rows = _rows(ROOT, [0.0, 0.0, 1.0, 0.0], AFTER_1, LEAF)
    # token 0 rejected (0.9), token 1 rejected (0.7 >= 0.6): only token 2 is left
    result, path = stochastic_verify_tree(tokens, parents, rows, Draws(0.9, 0.7, 0.0))  # type: ignore[arg-type]
    assert path == ()
    assert (result.num_accepted, result.first_rejection, result.extra_token) == (0, 0, 2)
    # a rejection under node 1: token 3 refused (0.8 >= 0.7), the rest of AFTER_1 left
    result, path = stochastic_verify_tree(tokens, parents, rows, Draws(0.9, 0.1, 0.8, 0.99))  # type: ignore[arg-type]
    assert path == (1,) and result.first_rejection == 1
    assert result.extra_token == 2  # 0.99 of the CDF of (1/3, 1/3, 1/3, 0)


def test_a_candidate_repeating_a_rejected_token_is_never_accepted() -> None:
    rows = _rows(ROOT, LEAF, LEAF, LEAF)
    # token 0 twice, then token 1: the second 0 has nothing left (0.0 < 0 is false)
    result, path = stochastic_verify_tree((0, 0, 1), (-1, -1, -1), rows, Draws(0.7, 0.0, 0.1, 0.5))  # type: ignore[arg-type]
    assert path == (2,) and result.accepted_token_ids == (1,)


@pytest.mark.parametrize("seed", range(30))
def test_a_chain_is_drawn_as_stochastic_verify_draws_it_with_one_hot_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k, vocab = 4, 7
    target = rng.dirichlet(np.ones(vocab) * 0.5, size=k + 1)
    tokens = [int(t) for t in rng.integers(0, vocab, size=k)]
    q = np.eye(vocab)[tokens]
    chain = stochastic_verify(tokens, q, target, np.random.default_rng(seed + 100))
    tree, path = stochastic_verify_tree(
        tokens, tuple(range(-1, k - 1)), DenseDrawn(target), np.random.default_rng(seed + 100)
    )
    assert tree == chain
    assert path == tuple(range(chain.num_accepted))


def test_the_committed_tokens_are_distributed_as_the_targets_rows() -> None:
    """A depth-2 tree, three candidates under the root and two under its first: the first
    committed token is drawn from the root's row, the second (given the first was node
    0's) from node 0's; 20,000 verifications against a chi-square test each."""
    vocab = 5
    rng = np.random.default_rng(7)
    rows = rng.dirichlet(np.ones(vocab), size=6)
    tokens, parents = (1, 3, 0, 2, 4), (-1, -1, -1, 0, 0)  # nodes 3, 4 under node 0
    draws = np.random.default_rng(11)
    first: Counter[int] = Counter()
    second: Counter[int] = Counter()
    for _ in range(20_000):
        result, path = stochastic_verify_tree(tokens, parents, DenseDrawn(rows), draws)
        committed = [*result.accepted_token_ids, result.extra_token]
        first[committed[0]] += 1
        if path[:1] == (0,):
            second[committed[1]] += 1
    for counts, row in ((first, rows[0]), (second, rows[1])):
        observed = np.array([counts[t] for t in range(vocab)], dtype=np.float64)
        expected = row * observed.sum()
        assert chisquare(observed, expected).pvalue > 1e-3, (observed, expected)
