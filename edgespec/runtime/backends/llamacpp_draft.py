"""The llama.cpp :class:`~edgespec.runtime.backends.base.DraftBackend`
(``edgespec draft --backend llamacpp``).

One llama.cpp context of one sequence (:class:`~edgespec.runtime.backends.llamacpp_context.
LlamaContext`, same configuration as the target's). Each call trims the sequence back to the
longest common prefix with the new context (``llama_memory_seq_rm``), decodes the context
tokens not yet cached in one block with logits for the last only, then γ − 1 single-token
steps. With ``lookup``, prompt lookup comes first, as in
:class:`~edgespec.runtime.backends.hybrid_draft.HybridDraft` (a looked-up token's q a point
mass when sampling). Otherwise greedy drafts take the argmax and sampled drafts draw from
the softmax at the temperature and return q over the target's vocabulary, both after the
request's shaping (:mod:`.draft_shaping`: its bias, penalties and cuts). A stop predictor
can end a block (:meth:`LlamaCppDraft.propose_until_stop`), as for the transformers drafts.
Token trees and hidden states are not drafted here.

Its context starts at :data:`DRAFT_CONTEXT_TOKENS` cells and grows as a session needs: a
call whose context and draft would not fit makes a context twice as large (or as large as
needed; whole blocks of 256 cells), at most the model's trained context, and decodes the
session's tokens into it again (a session of any length the target serves, memory only as
long as its sessions). Past the trained context a call is a ``ValueError`` naming it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgespec.core.features import stop_features
from edgespec.policies.stop_drafting import DraftStopPolicy, checked_keep_mask
from edgespec.runtime.backends.base import DraftProposal, common_prefix_length
from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.backends.llamacpp_context import LlamaContext, LlamaCppSettings
from edgespec.runtime.backends.ngram import suffix_match_next
from edgespec.runtime.sampling import draft_sample, logits_to_probs, point_masses

DRAFT_CONTEXT_TOKENS = 4096
"""A drafter's context to start with, in cells (it grows: see the module docstring)."""
CELL_BLOCK = 256  # llama.cpp sizes a sequence's context in whole blocks of 256 cells


@dataclass(frozen=True, slots=True)
class LlamaCppDraftModel:
    """What ``edgespec draft --backend llamacpp`` loads for ``--draft``: the settings each
    drafter's own context is made from (a drafter per request; the weights are mmapped).
    Made by :meth:`loaded`, which loads the GGUF once."""

    settings: LlamaCppSettings
    tokenizer: None = None

    @classmethod
    def loaded(cls, settings: LlamaCppSettings) -> LlamaCppDraftModel:
        """The model of ``settings``, its GGUF loaded once now (a context made, then freed):
        the wait for the file and llama.cpp's first load is the draft's, said as the draft
        loads, and a file llama.cpp cannot load fails here, before anything else loads;
        the drafters' own loads then map the file the page cache holds."""
        LlamaContext(settings).close()
        return cls(settings)

    @property
    def model(self) -> LlamaCppDraftModel:
        """Itself: make_drafter takes ``loaded.model``."""
        return self


class LlamaCppDraft:
    """A chain drafter on one llama.cpp sequence; ``vocab_size``: the target's vocabulary
    (q rows are that wide; the draft's own may not be wider)."""

    def __init__(
        self, settings: LlamaCppSettings, vocab_size: int | None = None, lookup: bool = False
    ) -> None:
        if settings.sequences != 1:
            raise ValueError(f"a llama.cpp drafter uses one sequence, got {settings.sequences}")
        self._ctx = LlamaContext(settings)
        self._vocab = self._ctx.vocab_size if vocab_size is None else vocab_size
        if self._ctx.vocab_size > self._vocab:
            width = self._ctx.vocab_size
            self._ctx.close()
            raise ValueError(
                f"the draft's vocabulary ({width}) is wider than the target's ({self._vocab})"
            )
        self._lookup = lookup
        self._cached: list[int] = []

    def close(self) -> None:
        self._ctx.close()

    def reset(self) -> None:
        self._ctx.trim(0, 0)
        self._cached = []

    def stop_problem(self) -> str | None:
        return None

    def propose(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        return self._chain(context, gamma, temperature, rng, None, shaping)

    def propose_until_stop(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        stop: DraftStopPolicy,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        return self._chain(context, gamma, temperature, rng, stop, shaping)

    def _grow(self, needed: int, gamma: int) -> None:
        """A context of at least ``needed`` cells (twice the present one, in whole blocks,
        at most the trained context) in place of the present one, which is freed; the
        session's tokens are decoded into it at the next call (nothing is cached there)."""
        trained = self._ctx.trained_context_tokens
        if 0 < trained < needed:
            raise ValueError(
                f"{needed - gamma + 1} context + {gamma} draft tokens are past the llama.cpp "
                f"draft's trained context of {trained} tokens"
            )
        size = -(-max(needed, 2 * self._ctx.context_tokens) // CELL_BLOCK) * CELL_BLOCK
        size = min(size, trained) if trained > 0 else size  # trained >= needed, above
        settings = dataclasses.replace(self._ctx.settings, context_tokens=size)
        self._ctx.close()
        self._cached = []
        self._ctx = LlamaContext(settings)

    def _sync(self, context: Sequence[int]) -> list[int]:
        """Trim the sequence to the longest common prefix with ``context`` (keeping one token
        to decode); the context tokens still to decode."""
        common = min(common_prefix_length(self._cached, context), len(context) - 1)
        if common < len(self._cached):
            self._ctx.trim(0, common)
            self._cached = self._cached[:common]
        return list(context[common:])

    def _step(self, tokens: Sequence[int]) -> npt.NDArray[np.float32]:
        start = len(self._cached)
        last = len(tokens) - 1
        logits, _ = self._ctx.decode([(t, start + i, 0, i == last) for i, t in enumerate(tokens)])
        self._cached.extend(int(t) for t in tokens)
        row: npt.NDArray[np.float32] = logits[0]
        return row

    def _next(
        self, seq: Sequence[int], row: npt.NDArray[np.float32], temperature: float,
        rng: np.random.Generator, shaping: DraftShaping | None,
    ) -> tuple[int, npt.NDArray[np.float32] | None]:  # fmt: skip
        """The token drafted after ``seq`` from ``row`` (shaped by ``shaping`` when given)
        and its q (``None`` when greedy)."""
        looked_up = suffix_match_next(seq, 8, 2) if self._lookup else None
        if looked_up is not None and temperature > 0:  # proposed for certain: a point mass
            return looked_up, point_masses((looked_up,), self._vocab)[0]
        if looked_up is not None:
            return looked_up, None
        if temperature > 0:
            probs = (
                logits_to_probs(row[None, :], temperature)[0]
                if shaping is None
                else shaping.probs(row, seq, temperature)
            )
            return draft_sample(probs, rng, self._vocab)
        if shaping is not None and shaping.moves_logits:
            return shaping.argmax(row, seq), None
        return int(np.argmax(row)), None

    def _chain(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        stop: DraftStopPolicy | None,
        shaping: DraftShaping | None,
    ) -> DraftProposal:
        if not context:
            raise ValueError("draft context must hold at least one token")
        needed = len(context) + gamma - 1  # the last drafted token is not decoded
        if needed > self._ctx.context_tokens:
            self._grow(needed, gamma)
        pending = self._sync(context)
        seq = list(context)
        tokens: list[int] = []
        rows: list[npt.NDArray[np.float32]] = []
        passes = 0
        for _ in range(gamma):
            row = self._step(pending)
            passes += 1
            if stop is not None and not checked_keep_mask(stop, stop_features(row))[0]:
                break
            token, probs = self._next(seq, row, temperature, rng, shaping)
            if probs is not None:
                rows.append(probs)
            tokens.append(token)
            seq.append(token)
            pending = [token]
        return DraftProposal(
            token_ids=tuple(tokens),
            probs=np.stack(rows) if rows else None,
            num_passes=None if stop is None else passes,
        )
