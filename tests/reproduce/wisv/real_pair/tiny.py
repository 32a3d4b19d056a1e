"""A tiny stand-in for the real pair (no downloads): tiny Llama target, a noisy copy as
the draft, and a hand-built decision head of the right widths that rejects every
mismatch on a good channel and accepts every one on a poor channel."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgespec.policies.semantic.csi import CSI_FEATURE_NAMES
from edgespec.policies.semantic.head import DecisionHead
from edgespec.reproduce.wisv.real_pair.answers import Pair
from edgespec.reproduce.wisv.real_pair.runs import Plan

HIDDEN = 32  # tiny_llama's hidden size
ANSWER_TOKENS = 4
FINISHED_AT = 12


@dataclass(frozen=True, slots=True)
class TokenOutcome:
    """The "answer" is the first four output tokens; an output is final at 12 tokens."""

    def finished(self, output_ids: Sequence[int]) -> bool:
        return len(output_ids) >= FINISHED_AT

    def answer(self, output_ids: Sequence[int]) -> str | None:
        return " ".join(str(t) for t in output_ids[:ANSWER_TOKENS]) or None


def quality_head() -> DecisionHead:
    """p = σ(100·ReLU(κ − 0.6) − 5): rejects (p ≈ 1) on a channel of quality κ above 0.7
    (500 Mbit/s: κ ≈ 0.90), accepts (p ≈ 0.007) below 0.6 (20 Mbit/s: κ ≈ 0.43)."""
    d_in = 2 * HIDDEN + len(CSI_FEATURE_NAMES)
    w1 = np.zeros((d_in, 1))
    w1[2 * HIDDEN + CSI_FEATURE_NAMES.index("quality"), 0] = 1.0
    return DecisionHead(
        HIDDEN, HIDDEN, np.zeros(d_in), np.ones(d_in), w1, np.array([-0.6]),
        np.array([[100.0]]), np.array([-5.0]),
    )  # fmt: skip


def tiny_loader(plan: Plan) -> tuple[Pair, list[tuple[int, list[int]]], dict[str, Any]]:
    from edgespec.runtime.backends.attention_mask import attention_layout
    from edgespec.runtime.backends.transformers_backend import TransformersTarget
    from edgespec.runtime.backends.transformers_draft import TransformersDraft
    from edgespec.runtime.testing import noisy_copy, tiny_llama

    target = tiny_llama(seed=0)
    pair = Pair(
        target=target,
        backend=TransformersTarget(target),
        drafter=TransformersDraft(noisy_copy(target, noise=0.2, seed=1)),
        head=quality_head(),
        outcome=TokenOutcome(),
        eos=frozenset(),
        layout=attention_layout(target),
        target_hidden_size=HIDDEN,
    )
    prompts = [(i, [3 + i, 1, 4, 1, 5, 9, 2 + i]) for i in range(plan.prompts)]
    return pair, prompts, {"target": "tiny_llama", "draft": "noisy_copy"}
