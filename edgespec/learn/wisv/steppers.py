"""The real models as one-token-at-a-time steppers for WISV's rollout capture
(:mod:`edgespec.learn.wisv.rollout`): each keeps its own KV cache, takes the committed
token and answers its greedy next token and the post-norm hidden state that predicts it.

The target's forwards are :func:`~edgespec.learn.wisv.decoding.target_forward` (masks and
positions as the runtime's target backend builds them), the draft's are
:func:`~edgespec.learn.wisv.decoding.draft_forward` on its own cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from transformers import DynamicCache

from edgespec.learn.wisv.decoding import (
    FloatArray,
    Layers,
    cache_layers,
    draft_forward,
    target_argmax,
    target_forward,
)
from edgespec.runtime.backends.attention_mask import AttentionLayout


def _row(hidden: torch.Tensor) -> FloatArray:
    return np.asarray(hidden.float().cpu().numpy(), dtype=np.float32)


@dataclass(slots=True, eq=False)
class TargetStepper:
    """The target on its own cache: row j of the rollout's hidden states predicts token j."""

    model: Any
    layout: AttentionLayout
    cache: DynamicCache = field(default_factory=DynamicCache)
    length: int = 0

    @torch.inference_mode()
    def start(self, prompt_ids: Sequence[int]) -> tuple[int, FloatArray]:
        hidden = target_forward(self.model, self.layout, self.cache, 0, [0], [list(prompt_ids)])
        self.length = len(prompt_ids)
        return self._next(hidden[0, -1])

    @torch.inference_mode()
    def step(self, token: int) -> tuple[int, FloatArray]:
        n = self.length
        hidden = target_forward(self.model, self.layout, self.cache, n, [n], [[token]])
        self.length += 1
        return self._next(hidden[0, -1])

    def _next(self, hidden: torch.Tensor) -> tuple[int, FloatArray]:
        return target_argmax(self.model, hidden[None])[0], _row(hidden)

    def layers(self) -> Layers:
        """The cache's per-layer (keys, values): the tokens fed so far."""
        return cache_layers(self.cache)


@dataclass(slots=True, eq=False)
class DraftStepper:
    """The draft on its own cache (a trimmed-vocabulary draft answers in target ids)."""

    model: Any
    cache: DynamicCache = field(default_factory=DynamicCache)

    @torch.inference_mode()
    def start(self, prompt_ids: Sequence[int]) -> tuple[int, FloatArray]:
        return self._run(prompt_ids)

    @torch.inference_mode()
    def step(self, token: int) -> tuple[int, FloatArray]:
        return self._run([token])

    def _run(self, token_ids: Sequence[int]) -> tuple[int, FloatArray]:
        greedy, hidden = draft_forward(self.model, token_ids, self.cache)
        return greedy[-1], _row(hidden[-1])
