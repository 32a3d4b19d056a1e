"""The neural :class:`~edgespec.runtime.backends.base.DraftBackend` over a Hugging Face
causal LM, and :class:`HybridDraft` (the same with prompt lookup first).

The draft keeps its own KV cache (a transformers ``DynamicCache``): each call crops it back
to the longest common prefix with the new context, forwards only the context tokens not yet
cached, then γ − 1 single-token steps, each through the model's own forward (one sequence,
no padding, so no explicit masks). For a :class:`~edgespec.models.trimmed.TrimmedVocabDraft`
it runs the trimmed head only (K logits instead of the target's 262k) and maps the choice
back to target ids; for any other causal LM it uses the full logits. The draft's logits are
kept, so traces can record per-position draft-logit features.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from edgespec.core.speculative import sample_token
from edgespec.runtime.backends.base import DraftProposal, common_prefix_length
from edgespec.runtime.backends.ngram import suffix_match_next
from edgespec.runtime.sampling import logits_to_probs


class TransformersDraft:
    """Draft backend over a HF-style causal LM; ``last_logits`` holds the previous call's
    γ × V' logits (V' = K for trimmed drafts, the full vocabulary otherwise)."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._trimmed = hasattr(model, "trimmed_forward")
        self._device = next(model.parameters()).device
        self._cache: Any = None
        self._cached: list[int] = []
        self.last_logits: npt.NDArray[np.float32] | None = None

    def reset(self) -> None:
        self._cache, self._cached = None, []

    def _sync(self, context: Sequence[int]) -> Sequence[int]:
        """Crop the cache to the longest common prefix with ``context`` (keeping at least
        one token to forward); returns the context tokens still to be forwarded."""
        common = min(common_prefix_length(self._cached, context), len(context) - 1)
        if self._cache is not None and common < len(self._cached):
            if common == 0:
                self.reset()
            else:
                self._cache.crop(common - len(self._cached))  # negative: tokens to drop
                self._cached = self._cached[:common]
        return context[common:]

    def _step(self, new_ids: Sequence[int]) -> torch.Tensor:
        """Forward ``new_ids`` on top of the cache; the draft's logits after the last one
        (float32, on the CPU)."""
        from transformers import DynamicCache

        if self._cache is None:
            self._cache = DynamicCache()
        ids = torch.tensor([list(new_ids)], dtype=torch.long, device=self._device)
        if self._trimmed:
            logits, self._cache = self._model.trimmed_forward(
                ids, past_key_values=self._cache, use_cache=True, logits_to_keep=1
            )
        else:
            out = self._model(input_ids=ids, past_key_values=self._cache, use_cache=True)
            logits, self._cache = out.logits[:, -1:], out.past_key_values
        self._cached.extend(int(t) for t in new_ids)
        row: torch.Tensor = logits[0, -1].float().cpu()
        return row

    def _to_target(self, index: int) -> int:
        if self._trimmed:
            return int(self._model.to_target_ids(torch.tensor(index)))
        return index

    def _sample(
        self, row: torch.Tensor, temperature: float, rng: np.random.Generator
    ) -> tuple[int, npt.NDArray[np.float32]]:
        """A token drawn from the draft's distribution and that distribution (q, over the
        target's whole vocabulary, float32)."""
        probs = logits_to_probs(row.numpy()[None, :], temperature)[0]
        if not self._trimmed:
            return sample_token(probs, rng), probs.astype(np.float32)
        full = np.zeros(int(self._model.config.vocab_size), dtype=np.float32)
        full[self._model.to_target_ids(torch.arange(row.shape[0])).numpy()] = probs
        return sample_token(full, rng), full

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
                token, probs = self._sample(row, temperature, rng)
                rows.append(probs)
            else:
                token = self._to_target(int(torch.argmax(row)))
            tokens.append(token)
            pending = (token,)
        self.last_logits = np.stack(logit_rows)
        return DraftProposal(token_ids=tuple(tokens), probs=np.stack(rows) if rows else None)


class HybridDraft(TransformersDraft):
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
            raise ValueError("HybridDraft drafts greedily; use TransformersDraft for sampling")
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
