"""Prompt lookup (n-gram matching against the context itself): :func:`suffix_match_next`,
the one lookup every drafter uses, and the model-free :class:`NgramDrafter`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgespec.runtime.backends.base import DraftProposal
from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.sampling import point_masses


def suffix_match_next(seq: Sequence[int], max_ngram: int, min_ngram: int) -> int | None:
    """The token that followed the most recent earlier occurrence of the longest suffix of
    ``seq`` of length ``max_ngram`` down to ``min_ngram``; ``None`` when none occurs."""
    tokens = list(seq)
    for n in range(min(max_ngram, len(tokens) - 1), min_ngram - 1, -1):
        suffix = tokens[-n:]
        for start in range(len(tokens) - n - 1, -1, -1):
            if tokens[start : start + n] == suffix:
                return int(tokens[start + n])
    return None


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
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        if not context:
            raise ValueError("draft context must hold at least one token")
        seq = list(context)
        tokens: list[int] = []
        while len(tokens) < gamma:
            looked_up = suffix_match_next(seq, self.max_ngram, 1)
            tokens.append(seq[-1] if looked_up is None else looked_up)
            seq.append(tokens[-1])
        probs = None if self.vocab_size is None else point_masses(tokens, self.vocab_size)
        return DraftProposal(token_ids=tuple(tokens), probs=probs)
