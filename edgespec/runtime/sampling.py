"""Logits → next-token distribution, shared by target verification and drafters (a token
is drawn from it with :func:`edgespec.core.speculative.sample_token`), and the compact
distribution a sampling drafter draws from and sends (:func:`draft_sample`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from edgespec.core.speculative import sample_token


def logits_to_probs(
    logits: npt.NDArray[np.float32], temperature: float, top_p: float = 1.0
) -> npt.NDArray[np.float64]:
    """Softmax of ``logits / temperature`` (rows are positions), then nucleus (top-p)
    truncation: keep the smallest set of tokens whose mass reaches ``top_p``, renormalize.

    ``temperature`` must be > 0 (greedy callers use argmax instead).
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for sampling, got {temperature}")
    scaled = np.asarray(logits, dtype=np.float64) / temperature
    scaled -= scaled.max(axis=-1, keepdims=True)
    probs = np.exp(scaled)
    probs /= probs.sum(axis=-1, keepdims=True)
    if top_p >= 1.0:
        return probs
    order = np.argsort(-probs, axis=-1, kind="stable")
    sorted_probs = np.take_along_axis(probs, order, axis=-1)
    # keep token k when the mass strictly before it is < top_p (the first is always kept)
    keep_sorted = (np.cumsum(sorted_probs, axis=-1) - sorted_probs) < top_p
    keep = np.zeros_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    probs = np.where(keep, probs, 0.0)
    return np.asarray(probs / probs.sum(axis=-1, keepdims=True), dtype=np.float64)


DRAFT_SUPPORT_MASS = 0.999
"""A sampling drafter keeps its most likely tokens up to this much of its mass (the rest of
its distribution is dropped before it draws: :func:`draft_sample`)."""

DRAFT_SUPPORT_MAX_TOKENS = 1024
"""... and at most this many tokens per drafted position."""


def draft_support(probs: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
    """Indices of ``probs``' most likely entries, most likely first (ties by index), holding
    at least :data:`DRAFT_SUPPORT_MASS` of its mass, at most
    :data:`DRAFT_SUPPORT_MAX_TOKENS` of them. Linear in the vocabulary: no full sort."""
    limit = min(DRAFT_SUPPORT_MAX_TOKENS, probs.shape[0])
    if limit < probs.shape[0]:
        bound = probs[np.argpartition(-probs, limit - 1)[limit - 1]]
        above = np.flatnonzero(probs > bound)
        tied = np.flatnonzero(probs == bound)[: limit - above.size]
        top = np.concatenate([above, tied])
    else:
        top = np.arange(limit)
    top = top[np.lexsort((top, -probs[top]))]
    mass = np.cumsum(probs[top]) / probs.sum()
    keep = int(np.searchsorted(mass, DRAFT_SUPPORT_MASS, side="left")) + 1
    return top[: min(keep, limit)]


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
