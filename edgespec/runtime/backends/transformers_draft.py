"""The neural :class:`~edgespec.runtime.backends.base.DraftBackend` over a Hugging Face
causal LM (:mod:`.hybrid_draft`: the same with prompt lookup first).

The draft keeps its own KV cache (a transformers ``DynamicCache``): each call crops it back
to the longest common prefix with the new context, forwards only the context tokens not yet
cached, then γ − 1 single-token steps, each through the model's own forward (one sequence,
no padding, so no explicit masks). For a :class:`~edgespec.models.trimmed.TrimmedVocabDraft`
it runs the trimmed head only (K logits instead of the target's 262k) and maps the choice
back to target ids; for any other causal LM it uses the full logits. The draft's logits stay
on its device (a greedy token is their argmax there); they are copied to the host only when
read (``last_logits``: traces record per-position draft-logit features from them), or when
sampling, a stop predictor or a request's shaping (:mod:`.draft_shaping`: its bias and
penalties, and when sampling its cuts, over a trimmed draft's kept columns) needs the
row's values.

It can end a block at a stop predictor's first predicted rejection
(:meth:`TransformersDraft.propose_until_stop`): after each draft forward the predictor sees
:func:`~edgespec.core.features.stop_features` of that logit row (over the K kept tokens for
a trimmed draft, as traces store them); the token it rejects is drafted (its pass is
run) but left out of the block.

For semantic verification (:meth:`TransformersDraft.return_hidden`) each block also carries
the draft's last-layer hidden state after the final norm at each drafted token's predicting
position (:attr:`~edgespec.runtime.backends.base.DraftProposal.hidden`), read by a forward
hook on the base model, so the logits are computed exactly as without it. The hook is
registered for this draft's own forward only, and reads only its own thread's: drafts over
one shared model (a server's co-located draft, one per fused run) neither leave hooks on it
nor read each other's states.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from edgespec.core.features import stop_features
from edgespec.policies.stop_drafting import DraftStopPolicy, checked_keep_mask
from edgespec.runtime.backends.base import DraftProposal, common_prefix_length, stopping_drafter
from edgespec.runtime.backends.draft_shaping import DraftShaping, TokenColumns
from edgespec.runtime.sampling import draft_sample, logits_to_probs


class TransformersDraft:
    """Draft backend over a HF-style causal LM; ``last_logits`` holds the previous call's
    γ × V' logits (V' = K for trimmed drafts, the full vocabulary otherwise), copied from
    the device when first read."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._trimmed = hasattr(model, "trimmed_forward")
        self._device = next(model.parameters()).device
        self._cache: Any = None
        self._cached: list[int] = []
        self._rows: list[torch.Tensor] = []  # the previous call's logit rows, on the device
        self._last_logits: npt.NDArray[np.float32] | None = None
        self._hidden = False  # whether each forward returns the hidden state (return_hidden)
        self._last_hidden: npt.NDArray[np.float32] | None = None
        self._token_columns: TokenColumns | None = None

    @property
    def last_logits(self) -> npt.NDArray[np.float32] | None:
        """The previous call's logit rows (γ × V', float32, on the host)."""
        if self._last_logits is None and self._rows:
            self._last_logits = torch.stack(self._rows).float().cpu().numpy()
        return self._last_logits

    @last_logits.setter
    def last_logits(self, rows: npt.NDArray[np.float32] | None) -> None:
        self._rows, self._last_logits = [], rows

    def _keep_rows(self, rows: list[torch.Tensor]) -> None:
        """This call's logit rows, left on the device until ``last_logits`` is read."""
        self._rows, self._last_logits = rows, None

    def hidden_problem(self) -> str | None:
        if type(self).propose is TransformersDraft.propose:
            return None
        return "it overrides propose: it drafts no single chain"

    def return_hidden(self, on: bool) -> int:
        """Return the hidden states with every block from now on (``on``) or stop; the draft's
        hidden size. The base model (``model.model``) is hooked during each of this draft's
        forwards: its output's last hidden state is the LM head's input (after the final
        norm)."""
        self._hidden = on
        return int(self._model.config.get_text_config().hidden_size)

    def _hooked(self) -> Any:
        """A forward hook on the base model that keeps this thread's last hidden state (the
        caller removes it after its forward)."""
        base = getattr(self._model, "model", None)
        if base is None:
            base = self._model.base_model
        thread = threading.get_ident()

        def capture(module: Any, args: Any, output: Any) -> None:
            if threading.get_ident() != thread:  # another draft's forward on the shared model
                return
            state = output.last_hidden_state if hasattr(output, "last_hidden_state") else output[0]
            self._last_hidden = state[0, -1].detach().float().cpu().numpy()

        return base.register_forward_hook(capture)

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
        (float32, on the model's device)."""
        from transformers import DynamicCache

        if self._cache is None:
            self._cache = DynamicCache()
        ids = torch.tensor([list(new_ids)], dtype=torch.long, device=self._device)
        hook = self._hooked() if self._hidden else None
        try:
            if self._trimmed:
                logits, self._cache = self._model.trimmed_forward(
                    ids, past_key_values=self._cache, use_cache=True, logits_to_keep=1
                )
            else:
                out = self._model(input_ids=ids, past_key_values=self._cache, use_cache=True)
                logits, self._cache = out.logits[:, -1:], out.past_key_values
        finally:
            if hook is not None:
                hook.remove()
        self._cached.extend(int(t) for t in new_ids)
        row: torch.Tensor = logits[0, -1].to(torch.float32, copy=True)  # not a view of them all
        return row

    def _to_target(self, index: int) -> int:
        if self._trimmed:
            return int(self._model.to_target_ids(torch.tensor(index, device=self._device)))
        return index

    def _columns(self, row: torch.Tensor) -> TokenColumns | None:
        """A trimmed draft's target id per column of its ``row`` (built at the first use);
        ``None`` for a draft over the target's ids."""
        if not self._trimmed:
            return None
        if self._token_columns is None:
            every = torch.arange(row.shape[0], device=self._device)
            self._token_columns = TokenColumns.of(self._model.to_target_ids(every).cpu().numpy())
        return self._token_columns

    def _sample(
        self,
        seq: Sequence[int],
        row: torch.Tensor,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None,
    ) -> tuple[int, npt.NDArray[np.float32]]:
        """A token drawn from the draft's distribution after ``seq`` (shaped by ``shaping``
        when given) and that distribution (q, over the target's whole vocabulary, float32)."""
        host, columns = row.cpu().numpy(), self._columns(row)
        probs = (
            logits_to_probs(host[None, :], temperature)[0]
            if shaping is None
            else shaping.probs(host, seq, temperature, columns)
        )
        if columns is None:
            return draft_sample(probs, rng, self._q_width(row))
        return draft_sample(probs, rng, self._q_width(row), columns.target_ids)

    def _q_width(self, row: torch.Tensor) -> int:
        """How many tokens a sampled q row spans: the target's vocabulary, the width of the
        draft's logit ``row`` (over the target's ids) or a trimmed draft's configured one."""
        return int(self._model.config.vocab_size) if self._trimmed else int(row.shape[0])

    @torch.inference_mode()
    def propose(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        return self._chain(context, gamma, temperature, rng, None, shaping)

    @torch.inference_mode()
    def propose_until_stop(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        stop: DraftStopPolicy,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        """:meth:`propose`, asking ``stop`` after each draft forward (see
        :class:`~edgespec.runtime.backends.base.StoppingDraftBackend`); ``last_logits``
        then holds one row per pass, the stopped-on position's included."""
        stopping_drafter(self)  # a subclass drafting no single chain cannot stop per token
        return self._chain(context, gamma, temperature, rng, stop, shaping)

    def stop_problem(self) -> str | None:
        if type(self).propose is TransformersDraft.propose:
            return None
        return "it overrides propose: it drafts no single chain"

    def _next(
        self,
        seq: Sequence[int],
        row: torch.Tensor,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None,
    ) -> tuple[int, npt.NDArray[np.float32] | None]:
        """The token drafted after ``seq`` from the draft's logits ``row`` there, shaped by
        ``shaping`` when given, and its q (``None`` when greedy)."""
        if temperature > 0:
            return self._sample(seq, row, temperature, rng, shaping)
        if shaping is not None and shaping.moves_logits:
            column = shaping.argmax(row.cpu().numpy(), seq, self._columns(row))
            return self._to_target(column), None
        return self._to_target(int(torch.argmax(row))), None

    def _chain(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        stop: DraftStopPolicy | None,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        """Draft up to ``gamma`` tokens one forward at a time; with ``stop``, end at its
        first rejection (that position's forward is run, its token is not drafted)."""
        if not context:
            raise ValueError("draft context must hold at least one token")
        pending = self._sync(context)
        seq = list(context)
        tokens: list[int] = []
        rows: list[npt.NDArray[np.float32]] = []
        logit_rows: list[torch.Tensor] = []
        hidden: list[npt.NDArray[np.float32]] = []
        for _ in range(gamma):
            self._last_hidden = None
            row = self._step(pending)
            logit_rows.append(row)
            if stop is not None and not _kept(stop, row):
                break
            token, probs = self._next(seq, row, temperature, rng, shaping)
            if probs is not None:
                rows.append(probs)
            if self._hidden and self._last_hidden is not None:
                hidden.append(self._last_hidden)
            tokens.append(token)
            seq.append(token)
            pending = (token,)
        self._keep_rows(logit_rows)
        return DraftProposal(
            token_ids=tuple(tokens),
            probs=np.stack(rows) if rows else None,
            num_passes=None if stop is None else len(logit_rows),
            hidden=np.stack(hidden) if hidden and len(hidden) == len(tokens) else None,
        )


def _kept(stop: DraftStopPolicy, row: torch.Tensor) -> bool:
    """Whether ``stop`` keeps the token drafted from logit ``row`` (its features need the
    row's values on the host)."""
    features = stop_features(row.cpu().numpy().astype(np.float32))
    return bool(checked_keep_mask(stop, features)[0])
