"""Model-free drafting by prompt lookup (n-gram matching against the context itself)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgespec.runtime.backends.base import DraftProposal


@dataclass(frozen=True, slots=True)
class NgramDrafter:
    """Prompt-lookup drafter: find the most recent earlier occurrence of the context's
    last n tokens (n = ``max_ngram`` down to 1) and propose the tokens that followed it,
    continuing the lookup on the proposal itself until γ tokens are drafted. With no
    match the last token is repeated. Deterministic: q is one-hot (``vocab_size`` wide
    when given, so stochastic verification can use it)."""

    max_ngram: int = 3
    vocab_size: int | None = None

    def __post_init__(self) -> None:
        if self.max_ngram < 1:
            raise ValueError(f"max_ngram must be >= 1, got {self.max_ngram}")

    def reset(self) -> None:
        """Stateless: nothing to forget."""

    def propose(
        self, context: Sequence[int], gamma: int, temperature: float, rng: np.random.Generator
    ) -> DraftProposal:
        if not context:
            raise ValueError("draft context must hold at least one token")
        seq = list(context)
        tokens: list[int] = []
        while len(tokens) < gamma:
            tokens.append(self._next(seq))
            seq.append(tokens[-1])
        probs = None
        if self.vocab_size is not None:
            probs = np.zeros((gamma, self.vocab_size), dtype=np.float32)
            probs[np.arange(gamma), tokens] = 1.0
        return DraftProposal(token_ids=tuple(tokens), probs=probs)

    def _next(self, seq: list[int]) -> int:
        for n in range(min(self.max_ngram, len(seq) - 1), 0, -1):
            suffix = seq[-n:]
            for start in range(len(seq) - n - 1, -1, -1):
                if seq[start : start + n] == suffix:
                    return seq[start + n]
        return seq[-1]
