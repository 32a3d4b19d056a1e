"""Logits → next-token distribution, shared by target verification and drafters (a token
is drawn from it with :func:`edgespec.core.speculative.sample_token`), the target's rows
computed as a verification reads them (:class:`TargetProbs`), and the compact distribution
a sampling drafter draws from and sends (:func:`draft_sample`; :func:`point_masses` for a
token proposed for certain, as prompt lookup proposes it)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgespec.core.features import softmax
from edgespec.core.speculative import sample_token
from edgespec.core.wire_limits import DRAFT_SUPPORT_MAX_TOKENS

NUCLEUS_FIRST_CANDIDATES = 1024
""":func:`logits_to_probs` looks for a row's nucleus among its this many most likely
tokens first, then among at least 8 times as many, and so on up to the whole row."""


def logits_to_probs(
    logits: npt.NDArray[np.float32],
    temperature: float,
    top_p: float = 1.0,
    top_k: int = 0,
    min_p: float = 0.0,
) -> npt.NDArray[np.float64]:
    """Softmax of ``logits / temperature`` (rows are positions), then the cuts of
    :mod:`edgespec.core.sampling_cuts`, each renormalizing what it keeps: top-k (the
    ``top_k`` most likely tokens, ties by token id; 0 or the whole row: no cut), nucleus
    (top-p: the smallest set of tokens whose mass reaches ``top_p``), min-p (the tokens whose
    probability is at least ``min_p`` times the likeliest's; 0: no cut). Each row's result
    depends on that row alone, bit for bit.

    ``temperature`` must be > 0 (greedy callers use argmax instead).
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for sampling, got {temperature}")
    probs = softmax(logits, temperature)
    if 0 < top_k < probs.shape[-1]:
        probs = _cut(probs, lambda row: top_tokens(row, top_k))
    if top_p < 1.0:
        probs = _cut(probs, lambda row: _nucleus(row, top_p))
    if min_p > 0.0:
        probs = _kept(probs, probs >= min_p * probs.max(axis=-1, keepdims=True))
    return probs


def _cut(
    probs: npt.NDArray[np.float64],
    keep_of: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.intp]],
) -> npt.NDArray[np.float64]:
    """``probs`` with each row cut to the tokens ``keep_of(row)`` names, renormalized, bit
    for bit as :func:`_kept` cuts it (the same zero-filled row summed the same way), but
    written into zeros and divided where kept: a cut keeps few of a large vocabulary."""
    cut = np.zeros_like(probs)
    for row, row_cut in zip(
        probs.reshape(-1, probs.shape[-1]), cut.reshape(-1, probs.shape[-1]), strict=True
    ):
        keep = keep_of(row)
        row_cut[keep] = row[keep]
        total = row_cut.sum()
        if 0.0 < total < math.inf:
            row_cut[keep] /= total
        else:  # nothing kept, or a non-finite row: divided whole, as _kept divides it
            row_cut /= total
    return cut


def _kept(probs: npt.NDArray[np.float64], keep: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    """``probs`` where ``keep`` holds, 0 elsewhere, each row renormalized."""
    probs = np.where(keep, probs, 0.0)
    return np.asarray(probs / probs.sum(axis=-1, keepdims=True), dtype=np.float64)


def _nucleus(probs: npt.NDArray[np.float64], top_p: float) -> npt.NDArray[np.intp]:
    """The tokens one softmax row keeps at ``top_p``: in descending order of probability
    (ties by token id), each token while the mass before it, ``cumsum − p``, is < top_p
    (the first always). That mass never decreases along the order, so the kept tokens are
    a prefix of it, and a prefix whose last token is not kept holds them all: looked for
    among the :data:`NUCLEUS_FIRST_CANDIDATES` most likely tokens, then at least 8 times as
    many (exactly the first tokens of a full sort, their cumulative sums the same), not a
    sort of the whole row. The mass still missing comes in tokens no likelier than the last
    candidate: when that many more would pass a quarter of the row, the whole row next."""
    if np.isnan(probs[0]):  # non-finite logits make the whole row NaN: nothing compares < top_p
        return np.empty(0, dtype=np.intp)
    size, limit = probs.shape[0], NUCLEUS_FIRST_CANDIDATES
    while True:
        top = top_tokens(probs, limit)
        ranked = probs[top]
        mass = np.cumsum(ranked)
        kept = (mass - ranked) < top_p
        if top.size == size or not kept[-1]:
            return top[kept]
        least = limit + (top_p - mass[-1]) / ranked[-1] if ranked[-1] > 0 else size
        limit = size if least > size / 4 else max(8 * limit, math.ceil(least))


def top_tokens(probs: npt.NDArray[np.float64], limit: int) -> npt.NDArray[np.intp]:
    """Indices of the ``limit`` largest entries of ``probs`` (one row; all when it is
    shorter), largest first, ties by index: the first ``limit`` of a stable descending sort,
    found in time linear in the row, sorting only those."""
    if limit < probs.shape[0]:
        bound = -np.partition(-probs, limit - 1)[limit - 1]  # the limit-th largest value
        above = np.flatnonzero(probs > bound)
        tied = np.flatnonzero(probs == bound)[: limit - above.size]
        tokens = np.concatenate([above, tied])
    else:
        tokens = np.arange(probs.shape[0])
    return _ranked(probs, tokens)


def _ranked(probs: npt.NDArray[np.float64], tokens: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """``tokens`` by descending ``probs``, ties by token id, as ``np.lexsort((tokens,
    -probs[tokens]))`` orders them, but by a faster unstable sort, then each run of equal
    values put in token order."""
    values = probs[tokens]
    order = np.argsort(-values)
    ranked = values[order]
    if ranked.size and np.isnan(ranked[-1]):  # NaNs sort last: lexsort's own order then
        return tokens[np.lexsort((tokens, -values))]
    same = ranked[1:] == ranked[:-1]
    if same.any():
        run = np.concatenate(([0], np.cumsum(~same)))
        tied = np.flatnonzero(np.concatenate((same, [False])) | np.concatenate(([False], same)))
        within = order[tied]
        order[tied] = within[np.argsort(run[tied] * probs.shape[0] + tokens[within])]
    return tokens[order]


@dataclass(slots=True)
class TargetProbs:
    """The target's distributions of a block's logit rows (K + 1 × V, float32) as
    :class:`~edgespec.core.speculative.DrawnRows`: row i is :func:`logits_to_probs` of
    ``logits[i]``, bit for bit that row of the whole block's, computed when first read.
    Speculative sampling reads the rows up to its first rejection (and the bonus row when it
    accepts all), not the K + 1; it reads a row's token, then perhaps the whole row, so
    only the last row read is kept."""

    logits: npt.NDArray[np.float32]
    temperature: float
    top_p: float
    top_k: int = 0
    min_p: float = 0.0
    _last: tuple[int, npt.NDArray[np.float64]] | None = None

    def prob(self, row: int, token: int) -> float:
        return float(self.row(row)[token])

    def row(self, row: int) -> npt.NDArray[np.float64]:
        if self._last is None or self._last[0] != row:
            probs = logits_to_probs(
                self.logits[row], self.temperature, self.top_p, self.top_k, self.min_p
            )
            self._last = (row, probs)
        return self._last[1]


DRAFT_SUPPORT_MASS = 0.999
"""A sampling drafter keeps its most likely tokens up to this much of its mass (the rest of
its distribution is dropped before it draws: :func:`draft_sample`), at most
:data:`~edgespec.core.wire_limits.DRAFT_SUPPORT_MAX_TOKENS` tokens of it."""


def draft_support(probs: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
    """Indices of ``probs``' most likely entries, most likely first (ties by index), holding
    at least :data:`DRAFT_SUPPORT_MASS` of its mass, at most
    :data:`DRAFT_SUPPORT_MAX_TOKENS` of them. Linear in the vocabulary: no full sort."""
    top = top_tokens(probs, DRAFT_SUPPORT_MAX_TOKENS)
    mass = np.cumsum(probs[top]) / probs.sum()
    keep = int(np.searchsorted(mass, DRAFT_SUPPORT_MASS, side="left")) + 1
    return top[: min(keep, top.size)]


def draft_sample(
    probs: npt.NDArray[np.float64],
    rng: np.random.Generator,
    vocab_size: int,
    target_ids: npt.NDArray[np.int64] | None = None,
) -> tuple[int, npt.NDArray[np.float32]]:
    """A drafted token and the distribution it was drawn from, q over the target's
    ``vocab_size`` tokens (float32): ``probs`` (the draft's softmax, one row) cut to its
    :func:`draft_support`, renormalised and rounded to float32, zero elsewhere. The token is
    drawn from that float32 row itself (its nonzero entries in token-id order: the same
    draw :func:`~edgespec.core.speculative.sample_token` makes from the whole row, zeros
    add nothing to its sums), so q is exactly the draft's sampling distribution and
    stochastic verification stays exact. q has at most :data:`DRAFT_SUPPORT_MAX_TOKENS`
    nonzero entries, so a block of γ rows travels as γ × support ids and values, not
    γ × vocabulary floats (4 MiB at γ = 4 over a 262,144-token vocabulary). The dropped tail
    is at most 1 − :data:`DRAFT_SUPPORT_MASS` of the draft's mass unless the cap binds,
    and a token's acceptance probability changes by at most the dropped mass.

    ``target_ids`` maps entry i of ``probs`` to its target token id (trimmed drafts);
    ``None`` is the identity."""
    support = draft_support(probs)
    kept = probs[support]
    ids = support if target_ids is None else target_ids[support]
    order = np.argsort(ids, kind="stable")
    ids, values = ids[order], (kept / kept.sum()).astype(np.float32)[order]
    q = np.zeros(vocab_size, dtype=np.float32)
    q[ids] = values
    return int(ids[sample_token(values, rng)]), q


def point_masses(token_ids: Sequence[int], vocab_size: int) -> npt.NDArray[np.float32]:
    """q of tokens proposed for certain (prompt lookup's): one row per token, 1 at its id
    over the target's ``vocab_size`` tokens, 0 elsewhere. Exact for stochastic
    verification, which accepts such a token with the target's probability of it and on a
    rejection draws from the target's row without it."""
    rows = np.zeros((len(token_ids), vocab_size), dtype=np.float32)
    rows[np.arange(len(token_ids)), list(token_ids)] = 1.0
    return rows
