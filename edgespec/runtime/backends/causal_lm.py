"""A :class:`~edgespec.runtime.backends.base.DraftBackend` for neural drafts that keeps the
draft's logits, so traces can record per-position draft-logit features.

For a :class:`~edgespec.models.trimmed.TrimmedVocabDraft` it runs the trimmed head only
(K logits instead of the target's 262k) and maps the argmax back to target ids; for any
other Hugging Face causal LM it uses the full logits. The KV cache is a transformers
``DynamicCache`` cropped back to the longest common prefix with each new context.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from edgespec.runtime.backends.base import DraftProposal
from edgespec.runtime.sampling import logits_to_probs, sample_token


class CausalLMDraft:
    """Draft backend over a HF-style causal LM; ``last_logits`` holds the previous call's
    γ × V' logits (V' = K for trimmed drafts, the full vocabulary otherwise)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._trimmed = hasattr(model, "trimmed_forward")
        self._cache: Any = None
        self._cached: list[int] = []
        self.last_logits: npt.NDArray[np.float32] | None = None

    def reset(self) -> None:
        self._cache, self._cached = None, []

    def _sync(self, context: Sequence[int]) -> Sequence[int]:
        """Crop the cache to the longest common prefix with ``context`` (keeping at least
        one token to forward); returns the context tokens still to be forwarded."""
        common = 0
        limit = min(len(self._cached), len(context) - 1)
        while common < limit and self._cached[common] == context[common]:
            common += 1
        if self._cache is not None and common < len(self._cached):
            if common == 0:
                self.reset()
            else:
                self._cache.crop(common - len(self._cached))  # negative: tokens to drop
                self._cached = self._cached[:common]
        return context[common:]

    def _step(self, new_ids: Sequence[int]) -> torch.Tensor:
        from transformers import DynamicCache

        if self._cache is None:
            self._cache = DynamicCache()
        ids = torch.tensor([list(new_ids)], dtype=torch.long)
        if self._trimmed:
            logits, self._cache = self._model.trimmed_forward(
                ids, past_key_values=self._cache, use_cache=True, logits_to_keep=1
            )
        else:
            out = self._model(input_ids=ids, past_key_values=self._cache, use_cache=True)
            logits, self._cache = out.logits[:, -1:], out.past_key_values
        self._cached.extend(int(t) for t in new_ids)
        row: torch.Tensor = logits[0, -1].float()
        return row

    def _to_target(self, index: int) -> int:
        if self._trimmed:
            return int(self._model.to_target_ids(torch.tensor(index)))
        return index

    def _full_probs(self, row: torch.Tensor, temperature: float) -> npt.NDArray[np.float32]:
        probs = logits_to_probs(row.numpy()[None, :], temperature)[0]
        if not self._trimmed:
            return np.asarray(probs, dtype=np.float32)
        full = np.zeros(int(self._model.config.vocab_size), dtype=np.float32)
        full[self._model.to_target_ids(torch.arange(row.shape[0])).numpy()] = probs
        return full

    @torch.inference_mode()
    def propose(
        self, context: Sequence[int], gamma: int, temperature: float, rng: np.random.Generator
    ) -> DraftProposal:
        if not context:
            raise ValueError("draft context must hold at least one token")
        pending = self._sync(context)
        tokens: list[int] = []
        rows: list[npt.NDArray[np.float32]] = []
        logit_rows: list[npt.NDArray[np.float32]] = []
        for _ in range(gamma):
            row = self._step(pending)
            logit_rows.append(row.numpy().astype(np.float32))
            if temperature > 0:
                probs = self._full_probs(row, temperature)
                token = sample_token(probs.astype(np.float64), rng)
                rows.append(probs)
            else:
                token = self._to_target(int(torch.argmax(row)))
            tokens.append(token)
            pending = (token,)
        self.last_logits = np.stack(logit_rows)
        return DraftProposal(token_ids=tuple(tokens), probs=np.stack(rows) if rows else None)


def suffix_match_next(seq: Sequence[int], max_ngram: int, min_ngram: int) -> int | None:
    """The token that followed the most recent earlier occurrence of the longest suffix of
    ``seq`` of length ``max_ngram`` down to ``min_ngram``; ``None`` when none occurs."""
    for n in range(min(max_ngram, len(seq) - 1), min_ngram - 1, -1):
        suffix = list(seq[-n:])
        for start in range(len(seq) - n - 1, -1, -1):
            if list(seq[start : start + n]) == suffix:
                return int(seq[start + n])
    return None


class HybridDraft(CausalLMDraft):
    """Neural draft with prompt lookup: at each drafted position, if the last
    ``min_ngram``..``max_ngram`` tokens occurred earlier in the context (or the draft so far),
    propose the token that followed them; otherwise the neural draft's argmax. Greedy only
    (a lookup token has no draft probability); the neural model still runs every step, so
    ``last_logits`` and its cache stay in step."""

    def __init__(self, model: Any, max_ngram: int = 8, min_ngram: int = 2) -> None:
        super().__init__(model)
        if not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
        self._max_ngram, self._min_ngram = max_ngram, min_ngram

    @torch.inference_mode()
    def propose(
        self, context: Sequence[int], gamma: int, temperature: float, rng: np.random.Generator
    ) -> DraftProposal:
        if temperature > 0:
            raise ValueError("HybridDraft drafts greedily; use CausalLMDraft for sampling")
        if not context:
            raise ValueError("draft context must hold at least one token")
        pending = self._sync(context)
        seq = list(context)
        tokens: list[int] = []
        logit_rows: list[npt.NDArray[np.float32]] = []
        for _ in range(gamma):
            row = self._step(pending)
            logit_rows.append(row.numpy().astype(np.float32))
            token = self._lookup_or_argmax(seq, row)
            tokens.append(token)
            seq.append(token)
            pending = (token,)
        self.last_logits = np.stack(logit_rows)
        return DraftProposal(token_ids=tuple(tokens), probs=None)

    def _lookup_or_argmax(self, seq: Sequence[int], row: torch.Tensor) -> int:
        """The token after ``seq``: prompt lookup's if it finds one, else the draft's argmax
        (``row`` is the draft's logits after ``seq``)."""
        looked_up = suffix_match_next(seq, self._max_ngram, self._min_ngram)
        return looked_up if looked_up is not None else self._to_target(int(torch.argmax(row)))
