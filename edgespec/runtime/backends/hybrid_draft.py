"""The neural draft with prompt lookup first (:class:`HybridDraft`): at each drafted
position the token that followed the context's last n-gram, where one is found, else the
neural draft's choice (its argmax, or when sampling a draw from its distribution; shaped as
the request asks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.backends.ngram import suffix_match_next
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.sampling import point_masses


class HybridDraft(TransformersDraft):
    """Neural draft with prompt lookup: at each drafted position, if the last
    ``min_ngram``..``max_ngram`` tokens occurred earlier in the context (or the draft so far),
    propose the token that followed them; otherwise the neural draft's argmax, or when
    sampling a token drawn from the draft's distribution. Sampling, a looked-up token is
    proposed for certain: its q is a point mass (:func:`~edgespec.runtime.sampling.point_masses`),
    which stochastic verification accepts with the target's probability of it, so the output
    keeps the target's distribution. The neural model still runs every step, so
    ``last_logits`` and its cache stay in step.

    With a stop predictor (:meth:`propose_until_stop`) the predictor is asked at every
    position, whatever the token's source: it sees the neural draft's features there (the
    forward that gives them runs anyway), and a rejection ends the block even where lookup
    found a token. One rule for every position keeps the accounting (one pass per asked
    position) and the features the same as for :class:`TransformersDraft`."""

    def __init__(self, model: Any, max_ngram: int = 8, min_ngram: int = 2) -> None:
        super().__init__(model)
        if not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
        self._max_ngram, self._min_ngram = max_ngram, min_ngram

    def hidden_problem(self) -> str | None:
        """A prompt-lookup token is not the draft model's own: its hidden state there is of
        the token the model would have proposed, so a decision head would judge another."""
        return super().hidden_problem() or (
            "its prompt-lookup tokens are not the draft model's own: the decision head would "
            "judge the draft's hidden state of another token"
        )

    def _next(
        self,
        seq: Sequence[int],
        row: torch.Tensor,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None,
    ) -> tuple[int, npt.NDArray[np.float32] | None]:
        looked_up = suffix_match_next(seq, self._max_ngram, self._min_ngram)
        if looked_up is None:
            return super()._next(seq, row, temperature, rng, shaping)
        if temperature > 0:
            return looked_up, point_masses((looked_up,), self._q_width(row))[0]
        return looked_up, None

    def _lookup_or_argmax(self, seq: Sequence[int], row: torch.Tensor) -> int:
        """The token after ``seq``: prompt lookup's if it finds one, else the draft's argmax
        (``row`` is the draft's logits after ``seq``)."""
        looked_up = suffix_match_next(seq, self._max_ngram, self._min_ngram)
        return looked_up if looked_up is not None else self._to_target(int(torch.argmax(row)))
