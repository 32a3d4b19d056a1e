"""Hand-built WISV decision heads whose rejection probability depends on one known input,
and references the semantic tests compare against (tiny models, full forwards, no cache)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from edgespec.policies.semantic.csi import CSI_FEATURE_NAMES
from edgespec.policies.semantic.head import DecisionHead

HIDDEN = 32  # tiny_llama's hidden size (target and noisy draft)
NUM_CSI = len(CSI_FEATURE_NAMES)
D_IN = 2 * HIDDEN + NUM_CSI


def _head(w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: float) -> DecisionHead:
    return DecisionHead(HIDDEN, HIDDEN, np.zeros(D_IN), np.ones(D_IN), w1, b1, w2, np.array([b2]))


def constant_head(logit: float) -> DecisionHead:
    """p = σ(logit) at every mismatch: -20 never rejects (for T ≥ 1), +20 always does."""
    return _head(np.zeros((D_IN, 1)), np.zeros(1), np.zeros((1, 1)), logit)


def draft_coordinate_head() -> DecisionHead:
    """p = σ(10·ReLU(h_d[0]) − 5): a draft hidden state whose coordinate 0 is +1 is
    rejected (p ≈ 0.993), one whose coordinate 0 is ≤ 0 accepted (p ≈ 0.0067)."""
    w1 = np.zeros((D_IN, 1))
    w1[0, 0] = 1.0
    return _head(w1, np.zeros(1), np.array([[10.0]]), -5.0)


def per_head() -> DecisionHead:
    """p = σ(1000·ReLU(PER − 0.1) − 5): rejects every mismatch on a link with PER above 0.1,
    accepts every one below (the CSI feature ``per``)."""
    w1 = np.zeros((D_IN, 1))
    w1[2 * HIDDEN + CSI_FEATURE_NAMES.index("per"), 0] = 1.0
    return _head(w1, np.array([-0.1]), np.array([[1000.0]]), -5.0)


def rows(*signs: float) -> np.ndarray:
    """Draft hidden rows (one per sign) for :func:`draft_coordinate_head`: coordinate 0 is
    the sign (+1: reject, −1: accept), the rest 0.5."""
    out = np.full((len(signs), HIDDEN), 0.5, dtype=np.float32)
    out[:, 0] = signs
    return out


@torch.no_grad()
def next_token(model: Any, seq: Sequence[int]) -> int:
    """The model's argmax after ``seq`` (a full forward, no cache)."""
    logits = model(input_ids=torch.tensor([list(seq)])).logits
    return int(torch.argmax(logits[0, -1]))


def accept_all_reference(
    target: Any, draft: Any, prompt: Sequence[int], gamma: int, max_new: int
) -> tuple[int, ...]:
    """The output when every drafted token is accepted: each round the draft's own γ
    greedy tokens (γ capped to leave the last token to the target, as the drafter loop
    does) and then the target's bonus token after them."""
    seq, out = list(prompt), list[int]()
    while len(out) < max_new:
        k = min(gamma, max_new - len(out) - 1)
        for _ in range(k):
            token = next_token(draft, seq)
            seq.append(token)
            out.append(token)
        bonus = next_token(target, seq)
        seq.append(bonus)
        out.append(bonus)
    return tuple(out)
