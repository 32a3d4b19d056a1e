"""One draft model drafting for many sessions at once: the drafting server's model
(:mod:`edgespec.runtime.edge.drafting_server`).

The draft is hosted in a
:class:`~edgespec.runtime.backends.transformers_backend.TransformersTarget`, which runs ONE
batched forward pass over many sessions' new tokens, each on its own KV state (explicit
masks, exact per row). Each session keeps a :class:`DraftState`: the KV and the tokens it
covers. A block of γ tokens for a batch is γ passes over the batch, one new token per
session per pass; the first pass of a session forwards what its KV lacks (the prompt on a
cold start, else the tokens the last verification committed that the draft did not
already forward), after cropping the KV back to its longest common prefix with the
committed sequence, as the single-session
:class:`~edgespec.runtime.backends.transformers_draft.TransformersDraft` does with its cache.

A trimmed-vocabulary draft (:class:`~edgespec.models.trimmed.TrimmedVocabDraft`, e.g. the
bundled ``gemma3-270m-draft``) runs through its K-row head only (its ``trimmed_forward``
maps the target ids in); each argmax is mapped back to a target id. Drafting is greedy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from transformers.modeling_outputs import CausalLMOutputWithPast

from edgespec.runtime.backends.base import ForwardItem, KVState, common_prefix_length
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.draft_backends import draft_input_vocab


@dataclass(slots=True)
class DraftState:
    """One session's draft KV: ``kv`` covers ``cached`` (target token ids)."""

    kv: KVState | None = None
    cached: list[int] = field(default_factory=list)


class _KeptVocabLM(torch.nn.Module):
    """A trimmed-vocabulary draft as a plain causal LM over target ids (K output logits, its
    kept tokens'), the shape a :class:`TransformersTarget` drives:
    :meth:`~edgespec.models.trimmed.TrimmedVocabDraft.trimmed_forward` does the work."""

    def __init__(self, draft: Any) -> None:
        super().__init__()
        self.draft = draft
        self.config = draft.model.config

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_values: Any = None,
        use_cache: bool = True,
        logits_to_keep: int = 0,
        **_: Any,
    ) -> CausalLMOutputWithPast:
        logits, cache = self.draft.trimmed_forward(
            input_ids, past_key_values, attention_mask, position_ids, use_cache, logits_to_keep
        )
        return CausalLMOutputWithPast(logits=logits, past_key_values=cache)


class BatchedDraftModel:
    """Greedy drafting for many sessions per forward pass, each on its own KV state."""

    def __init__(self, model: Any) -> None:
        self._to_target: npt.NDArray[np.int64] | None = None
        self.vocab_size = draft_input_vocab(model)  # the token ids it takes in
        if hasattr(model, "trimmed_forward"):  # TrimmedVocabDraft: outputs through its map
            every = torch.arange(int(model.num_kept), device=next(model.parameters()).device)
            self._to_target = model.to_target_ids(every).cpu().numpy()
            model = _KeptVocabLM(model)
        # a draft proposes; the target's verdict decides: no need of batch-invariant numerics
        self.backend = TransformersTarget(model, eos_token_ids=frozenset(), numerics="lossy")
        self.num_passes = 0

    def draft(
        self, states: Sequence[DraftState], contexts: Sequence[Sequence[int]], gammas: Sequence[int]
    ) -> list[tuple[int, ...]]:
        """Greedy blocks of ``gammas[i]`` tokens after ``contexts[i]`` (the committed
        sequence, prompt + output) for every session i: ``max(gammas)`` batched passes,
        each over the sessions that still draft. ``states`` are updated in place."""
        blocks: list[list[int]] = [[] for _ in states]
        for step in range(max(gammas, default=0)):
            rows = [i for i, gamma in enumerate(gammas) if gamma > step]
            pending = [
                self._pending(states[i], (*contexts[i], *blocks[i]), step == 0) for i in rows
            ]
            items = [
                ForwardItem(states[i].kv, len(states[i].cached), new, 1)
                for i, new in zip(rows, pending, strict=True)
            ]
            outputs = self.backend.forward(items)
            self.num_passes += 1
            for i, new, out in zip(rows, pending, outputs, strict=True):
                states[i].kv = out.kv
                states[i].cached.extend(new)
                blocks[i].append(self._target_id(out.rows.argmax()[-1]))
        return [tuple(block) for block in blocks]

    def _pending(self, state: DraftState, seq: tuple[int, ...], fresh: bool) -> tuple[int, ...]:
        """The tokens of ``seq`` to forward for the draft's next token after it. ``fresh``
        (a block's first pass): first crop the KV to its longest common prefix with
        ``seq``, keeping at least one token to forward."""
        if fresh:
            keep = min(common_prefix_length(state.cached, seq), len(seq) - 1)
            if keep < len(state.cached):
                kv = state.kv
                state.kv = self.backend.crop(kv, keep) if keep and kv is not None else None
                del state.cached[keep:]
        return seq[len(state.cached) :]

    def _target_id(self, index: int) -> int:
        return index if self._to_target is None else int(self._to_target[index])
