"""The speculative-decoding verification math, in one place (what it gains, in closed form:
:mod:`edgespec.core.speedup`).

Terms (Leviathan et al. 2023; DSD §2; WISP §2):

- γ (``gamma``), K: number of draft tokens proposed in one round.
- q_i: the draft model's next-token distribution at drafted position i (i = 0..K-1).
- p_i: the target model's next-token distribution at the same position; the target
  also yields p_K, the distribution after all K draft tokens (the bonus position).
- α: per-token acceptance probability, E[min(1, p(y)/q(y))] under y ~ q.
- L: accepted length, the number of leading draft tokens accepted (0..K).
- R: first-rejection index; equals L when L < K, undefined (``None``) when L == K.
- τ: tokens committed per round, L + 1 (the accepted drafts plus the extra token).
- c: cost ratio of one draft-model step to one target-model step.

Greedy verification commits exactly the target's argmax sequence, for a chain of K
draft tokens or a tree of them (several candidates per position, one target pass). Stochastic
verification (accept y_i with prob. min(1, p_i(y_i)/q_i(y_i)); on rejection sample from
norm(max(0, p_i - q_i)); if all K accepted sample the bonus from p_K) leaves the output
distributed exactly as the target's own sampling; so does its form for a tree whose nodes
are proposed for certain (:func:`stochastic_verify_tree`: each candidate tried in turn
against what the target's row leaves after the ones rejected before it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from edgespec.core.tree import check_tree, children, tree_depth
from edgespec.core.types import FloatArray, VerifyResult


def greedy_verify(draft_tokens: Sequence[int], target_argmax: Sequence[int]) -> VerifyResult:
    """Accept while ``draft_tokens[i] == target_argmax[i]``.

    ``target_argmax`` has K + 1 entries: the target's argmax after the committed prefix
    and after each of the K draft tokens. The extra token is ``target_argmax[L]``.
    """
    num_drafted = len(draft_tokens)
    if len(target_argmax) != num_drafted + 1:
        raise ValueError(
            f"target_argmax needs K+1={num_drafted + 1} entries, got {len(target_argmax)}"
        )
    num_accepted = 0
    while num_accepted < num_drafted and draft_tokens[num_accepted] == target_argmax[num_accepted]:
        num_accepted += 1
    return VerifyResult(
        num_drafted=num_drafted,
        num_accepted=num_accepted,
        first_rejection=None if num_accepted == num_drafted else num_accepted,
        extra_token=int(target_argmax[num_accepted]),
        accepted_token_ids=tuple(int(t) for t in draft_tokens[:num_accepted]),
    )


def greedy_verify_tree(
    draft_tokens: Sequence[int], parents: Sequence[int], target_argmax: Sequence[int]
) -> tuple[VerifyResult, tuple[int, ...]]:
    """Greedy verification of a token tree (:mod:`edgespec.core.tree`).

    ``target_argmax`` has K + 1 entries: index 0 is the target's argmax after the committed
    prefix (the root), index i + 1 its argmax after node i (on node i's own path). From the
    root, move to the child whose token equals the target's argmax there, until no child
    does; that argmax is the extra token. Returns the result, with ``num_drafted`` the tree's
    depth D (so ``first_rejection`` is ``None`` only when a depth-D path was accepted), and
    the accepted nodes in path order. The committed tokens are exactly the target's greedy
    continuation, as for a chain; a chain gives the same result as :func:`greedy_verify`.
    Among siblings with the same token the first is taken.
    """
    check_tree(parents, len(draft_tokens))
    if len(target_argmax) != len(draft_tokens) + 1:
        raise ValueError(
            f"target_argmax needs K+1={len(draft_tokens) + 1} entries, got {len(target_argmax)}"
        )
    kids = children(parents)
    path: list[int] = []
    node = -1
    while True:
        want = int(target_argmax[node + 1])
        nxt = next((c for c in kids.get(node, ()) if draft_tokens[c] == want), None)
        if nxt is None:
            break
        path.append(nxt)
        node = nxt
    return _tree_result(draft_tokens, parents, path, want), tuple(path)


def _tree_result(
    draft_tokens: Sequence[int], parents: Sequence[int], path: Sequence[int], extra: int
) -> VerifyResult:
    """A tree verification's result: ``path`` the accepted nodes from the root, ``extra``
    the token after them, ``num_drafted`` the tree's depth."""
    depth = tree_depth(parents)
    return VerifyResult(
        num_drafted=depth,
        num_accepted=len(path),
        first_rejection=None if len(path) == depth else len(path),
        extra_token=extra,
        accepted_token_ids=tuple(int(draft_tokens[i]) for i in path),
    )


def stochastic_verify_tree(
    draft_tokens: Sequence[int],
    parents: Sequence[int],
    target: DrawnRows,
    rng: np.random.Generator,
) -> tuple[VerifyResult, tuple[int, ...]]:
    """Speculative sampling of a token tree whose every node is proposed for certain (its q
    a point mass; Sequoia's sampling without replacement). ``target`` holds K + 1 rows as
    :func:`greedy_verify_tree` orders them: row 0 the target's distribution after the
    committed prefix, row i + 1 after node i. From the root, each child in turn is accepted
    with its probability under r, the target's row there less the children rejected before
    it (renormalized); a rejected child's token leaves r. The first child accepted is
    moved to; where none is (or a node has no children), the extra token is drawn from r:
    the whole row after an accepted leaf, the bonus. Each committed token is then
    distributed as the target's own sampling draws it. A chain gives what
    :func:`stochastic_verify` gives with one-hot q rows, draw for draw. Returns the
    result (``num_drafted``: the tree's depth) and the accepted nodes in path order."""
    check_tree(parents, len(draft_tokens))
    kids = children(parents)
    path: list[int] = []
    node = -1
    while True:
        chosen, rest = _first_accepted(kids.get(node, ()), draft_tokens, target, node + 1, rng)
        if chosen is None:
            break
        path.append(chosen)
        node = chosen
    return _tree_result(draft_tokens, parents, path, sample_token(rest, rng)), tuple(path)


def _first_accepted(
    candidates: Sequence[int],
    draft_tokens: Sequence[int],
    target: DrawnRows,
    row: int,
    rng: np.random.Generator,
) -> tuple[int | None, FloatArray]:
    """The first of ``candidates`` (node indices) that target ``row``'s r accepts, each
    tried in turn (:func:`stochastic_verify_tree`); else ``None`` and r normalized, the
    distribution the extra token is drawn from (the whole row when there are none). The
    row is read whole only after a rejection."""
    rest: FloatArray | None = None
    for node in candidates:
        token = int(draft_tokens[node])
        accept = target.prob(row, token) if rest is None else rest[token] / rest.sum()
        if rng.random() < accept:
            return node, np.empty(0)
        if rest is None:
            rest = np.array(target.row(row), dtype=np.float64)  # a copy: the row is kept
        rest[token] = 0.0
    if rest is None:
        return None, target.row(row)
    total = float(rest.sum())
    if total <= 1e-12:  # the rejected held all the mass: a rejection of probability 0
        return None, target.row(row)
    return None, np.asarray(rest / total, dtype=np.float64)


def residual_distribution(target_probs: FloatArray, draft_probs: FloatArray) -> FloatArray:
    """norm(max(0, p − q)): what to sample from after a rejection.

    If p and q agree everywhere (numerically no residual mass), a rejection has
    probability zero; fall back to p so the function is total.
    """
    residual = np.maximum(target_probs - draft_probs, 0.0)
    total = float(residual.sum())
    if total <= 1e-12:
        return np.asarray(target_probs / target_probs.sum(), dtype=np.float64)
    return np.asarray(residual / total, dtype=np.float64)


def acceptance_probability(target_probs: FloatArray, draft_probs: FloatArray) -> float:
    """Σ_v min(p(v), q(v)): the probability that stochastic verification accepts a token
    drawn from ``draft_probs`` q where the target's distribution is ``target_probs`` p
    (the α above, = 1 − the total variation distance between p and q). Each row
    is read as it is drawn from and judged (:func:`as_drawn`), so a row sent as float32 that
    does not sum to exactly 1 counts as the verifier counts it."""
    p, q = as_drawn(target_probs), as_drawn(draft_probs)
    if p.shape != q.shape:
        raise ValueError(f"target row has {p.shape[-1]} entries, draft row {q.shape[-1]}")
    return float(min(np.minimum(p, q).sum(), 1.0))


def sample_token(probs: FloatArray, rng: np.random.Generator) -> int:
    """Draw one token id from a probability vector (float32 or float64; it need not sum to
    exactly 1) with one ``rng.random()`` draw, inverting the float64 CDF. The one sampler of
    the project: verification, drafters and every other caller draw tokens through it."""
    cdf = np.cumsum(probs, dtype=np.float64)
    if not (cdf[-1] > 0 and math.isfinite(cdf[-1])):  # NaN or inf in the row, or no mass
        raise ValueError(f"cannot draw a token from a row whose mass is {cdf[-1]}")
    u = rng.random() * cdf[-1]
    return int(min(np.searchsorted(cdf, u, side="right"), len(cdf) - 1))


def as_drawn(probs: FloatArray) -> FloatArray:
    """Rows of ``probs`` as :func:`sample_token` draws from them: each divided by its float64
    cumulative sum, summed in the same order, so a verifier judges a draft token by exactly
    the distribution it was drawn from (a row sent as float32 need not sum to 1)."""
    rows = np.asarray(probs, dtype=np.float64)
    if rows.size == 0:
        return rows
    totals = np.cumsum(rows, axis=-1, dtype=np.float64)[..., -1:]
    return np.asarray(rows / totals, dtype=np.float64)


class DrawnRows(Protocol):
    """Rows over the vocabulary as :func:`sample_token` draws from them, read one at a time:
    a draft block's q (as drawn: :func:`as_drawn`) or the target's p.
    :func:`stochastic_verify_drawn` asks ``prob(i, token)`` of each position it judges and
    ``row(i)`` (all V entries) only of a row it draws from (the rejected position's, the
    bonus row), so rows it does not read need never be computed."""

    def prob(self, row: int, token: int) -> float: ...

    def row(self, row: int) -> FloatArray: ...


@dataclass(frozen=True, slots=True)
class DenseDrawn:
    """:class:`DrawnRows` over dense rows (a q already read as drawn)."""

    rows: FloatArray

    def prob(self, row: int, token: int) -> float:
        return float(self.rows[row, token])

    def row(self, row: int) -> FloatArray:
        return np.asarray(self.rows[row])


def stochastic_verify(
    draft_tokens: Sequence[int],
    draft_probs: FloatArray,
    target_probs: FloatArray,
    rng: np.random.Generator,
) -> VerifyResult:
    """Speculative sampling with residual resampling.

    ``draft_probs`` is K × V (row i is q_i, read as drawn: :func:`as_drawn`);
    ``target_probs`` is (K + 1) × V (row i is p_i, row K is the bonus distribution).
    Randomness comes only from ``rng``.
    """
    num_drafted = len(draft_tokens)
    if draft_probs.shape[0] != num_drafted or target_probs.shape[0] != num_drafted + 1:
        raise ValueError(
            f"expected draft_probs K×V and target_probs (K+1)×V with K={num_drafted}, got "
            f"{draft_probs.shape} and {target_probs.shape}"
        )
    if draft_probs.shape[1] != target_probs.shape[1]:
        raise ValueError("draft and target vocabularies differ in size")
    return stochastic_verify_drawn(
        draft_tokens, DenseDrawn(as_drawn(draft_probs)), DenseDrawn(target_probs), rng
    )


def stochastic_verify_drawn(
    draft_tokens: Sequence[int],
    drawn: DrawnRows,
    target: DrawnRows,
    rng: np.random.Generator,
) -> VerifyResult:
    """:func:`stochastic_verify` with q (K rows) and p (K + 1 rows over the same vocabulary;
    the caller checks the shapes) given as :class:`DrawnRows`: a q held as each row's
    nonzero entries is read densely at its rejected position only, and of p only the rows
    up to the first rejection (or the bonus row) are read. The same draws, the same result,
    as :func:`stochastic_verify` of the dense rows."""
    num_drafted = len(draft_tokens)
    for i, token in enumerate(draft_tokens):
        p, q = target.prob(i, token), drawn.prob(i, token)
        accept_prob = 1.0 if q <= 0.0 and p > 0.0 else (min(1.0, p / q) if q > 0.0 else 0.0)
        if rng.random() < accept_prob:
            continue
        extra = sample_token(residual_distribution(target.row(i), drawn.row(i)), rng)
        return VerifyResult(
            num_drafted=num_drafted,
            num_accepted=i,
            first_rejection=i,
            extra_token=extra,
            accepted_token_ids=tuple(int(t) for t in draft_tokens[:i]),
        )
    bonus = sample_token(target.row(num_drafted), rng)
    return VerifyResult(
        num_drafted=num_drafted,
        num_accepted=num_drafted,
        first_rejection=None,
        extra_token=bonus,
        accepted_token_ids=tuple(int(t) for t in draft_tokens),
    )
