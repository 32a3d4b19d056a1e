"""Logits → next-token distribution, shared by target verification and drafters (a token
is drawn from it with :func:`edgespec.core.speculative.sample_token`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


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
