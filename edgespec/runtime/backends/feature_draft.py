"""Drafting with a :class:`~edgespec.models.feature_draft.FeatureDraftNet` (EAGLE-style).

The drafter loop hands the target's hidden states of committed positions to
:meth:`FeatureDraft.observe_target_hidden` after every verification; :meth:`propose`
caches one attention entry per position with a true feature and drafts γ tokens from the
last one (see edgespec/models/feature_draft.py for the terms). Before the first
verification there are no features: the round is drafted by prompt lookup (the token that
followed the latest earlier occurrence of the context's last 2–8 tokens), else by
repeating the last token, so it costs one verification and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import torch

from edgespec.models.feature_draft import FeatureDraftNet
from edgespec.runtime.backends.base import DraftProposal, common_prefix_length
from edgespec.runtime.backends.draft_shaping import DraftShaping, TokenColumns
from edgespec.runtime.backends.ngram import suffix_match_next
from edgespec.runtime.sampling import draft_sample, logits_to_probs, point_masses


class FeatureDraft:
    """:class:`~edgespec.runtime.backends.base.FeatureDraftBackend` over a feature draft.

    With ``lookup``, a drafted position takes the prompt-lookup token when the context's
    last ``min_ngram``..``max_ngram`` tokens occurred earlier (sampling: for certain, its q
    a point mass).
    ``last_logits`` holds the previous call's γ × K draft logits (none in fallback rounds).
    """

    wants_target_hidden = True

    def __init__(
        self, net: FeatureDraftNet, lookup: bool = False, max_ngram: int = 8, min_ngram: int = 2
    ) -> None:
        self._net = net
        self._device = net.head_rows.device
        self._lookup, self._max_ngram, self._min_ngram = lookup, max_ngram, min_ngram
        self.last_logits: npt.NDArray[np.float32] | None = None
        self._token_columns: TokenColumns | None = None
        self.reset()

    def reset(self) -> None:
        self._features = torch.zeros((0, self._net.config.hidden_size), device=self._device)
        self._tokens: list[int] = []  # context the cached entries were built from
        self._keys: torch.Tensor | None = None
        self._values: torch.Tensor | None = None
        self._last: torch.Tensor | None = None  # prediction of the last cached entry

    @property
    def num_entries(self) -> int:
        return 0 if self._keys is None else int(self._keys.shape[2])

    def observe_target_hidden(self, start_pos: int, rows: npt.NDArray[np.float32]) -> None:
        known = int(self._features.shape[0])
        if start_pos > known:  # a gap: rows before start_pos never arrived
            raise ValueError(f"target hidden rows start at {start_pos}, but only {known} known")
        new = torch.as_tensor(np.asarray(rows, dtype=np.float32), device=self._device)
        if new.ndim != 2 or new.shape[1] != self._net.config.hidden_size:
            raise ValueError(
                f"target hidden rows must be (n, {self._net.config.hidden_size}), "
                f"got {tuple(new.shape)}"
            )
        self._features = torch.cat((self._features[:start_pos], new))
        self._crop(min(self.num_entries, start_pos))

    def _crop(self, num_entries: int) -> None:
        if self._keys is None or self._values is None or num_entries >= self.num_entries:
            return
        if num_entries == 0:
            self._keys = self._values = self._last = None
            return
        self._keys = self._keys[:, :, :num_entries]
        self._values = self._values[:, :, :num_entries]
        self._last = None  # recomputed by the next _extend

    def _attend(self, x: torch.Tensor, first_pos: int, extra: int = 0) -> torch.Tensor:
        """Run entries ``x`` (1, m, d) at positions first_pos.. over the cache (+ ``extra``
        temporary keys already appended); returns their predictions (m, d)."""
        net = self._net
        positions = torch.arange(first_pos, first_pos + x.shape[1], device=self._device)
        q, k, v = net.qkv(x, positions)
        keys = k if self._keys is None else torch.cat((self._keys, k), 2)
        values = v if self._values is None else torch.cat((self._values, v), 2)
        m, total = x.shape[1], keys.shape[2]
        mask = torch.ones(m, total, dtype=torch.bool, device=self._device).tril(total - m)
        scores = (q @ keys.transpose(-1, -2)) / math.sqrt(net.config.head_dim)
        attended = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ values
        self._keys, self._values = keys, values
        return net.finish(x, attended)[0]

    def _extend(self, context: Sequence[int]) -> bool:
        """Cache entries 0..n−1 for context x_0..x_n; False when features are missing."""
        n = len(context) - 1
        common = common_prefix_length(self._tokens, context)
        self._crop(min(self.num_entries, max(common - 1, 0)))
        if self._features.shape[0] < n or n < 1:
            return False
        start = self.num_entries
        if start < n or self._last is None:
            start = min(start, n - 1)
            self._crop(start)
            ids = self._net.target_to_draft[
                torch.tensor(list(context[start + 1 : n + 1]), device=self._device)
            ]
            x = self._net.entry_inputs(self._features[start:n][None], ids[None])
            self._last = self._attend(x, start)[-1]
        self._tokens = list(context[: n + 1])
        return True

    def _fallback(self, context: Sequence[int], gamma: int, temperature: float) -> DraftProposal:
        seq = list(context)
        tokens: list[int] = []
        for _ in range(gamma):
            token = suffix_match_next(seq, self._max_ngram, self._min_ngram)
            if token is None:
                break
            tokens.append(token)
            seq.append(token)
        if not tokens:
            tokens = [int(context[-1])]
        self.last_logits = None
        probs = None
        if temperature > 0:  # point masses: exact for stochastic verification
            probs = point_masses(tokens, self._net.config.target_vocab_size)
        return DraftProposal(token_ids=tuple(tokens), probs=probs)

    @torch.inference_mode()
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
        if not self._extend(context):
            return self._fallback(context, gamma, temperature)
        assert self._keys is not None and self._values is not None and self._last is not None
        cached_keys, cached_values = self._keys, self._values
        net, seq = self._net, list(context)
        prediction = self._last
        tokens: list[int] = []
        logit_rows: list[npt.NDArray[np.float32]] = []
        prob_rows: list[npt.NDArray[np.float32]] = []
        try:
            for step in range(gamma):
                logits = net.head_logits(prediction).cpu()  # K logits: the verdict's rows
                logit_rows.append(logits.numpy().astype(np.float32))
                token = self._choose(logits, seq, temperature, rng, prob_rows, shaping)
                tokens.append(token)
                seq.append(token)
                if step == gamma - 1:
                    break
                ids = net.target_to_draft[torch.tensor([[token]], device=self._device)]
                x = net.entry_inputs(prediction[None, None], ids)
                prediction = self._attend(x, len(context) - 1 + step)[0]
        finally:  # temporary entries never stay in the cache
            self._keys, self._values = cached_keys, cached_values
        self.last_logits = np.stack(logit_rows)
        probs = np.stack(prob_rows) if prob_rows else None
        return DraftProposal(token_ids=tuple(tokens), probs=probs)

    def _choose(
        self,
        logits: torch.Tensor,
        seq: list[int],
        temperature: float,
        rng: np.random.Generator,
        prob_rows: list[npt.NDArray[np.float32]],
        shaping: DraftShaping | None,
    ) -> int:
        """The token drafted after ``seq`` from the head's K ``logits`` (shaped by
        ``shaping`` when given); a sampled token's q is added to ``prob_rows``."""
        row = logits.numpy()
        looked_up = (
            suffix_match_next(seq, self._max_ngram, self._min_ngram) if self._lookup else None
        )
        if looked_up is not None:  # sampling: proposed for certain, q a point mass
            if temperature > 0:
                prob_rows.append(point_masses((looked_up,), self._net.config.target_vocab_size)[0])
            return looked_up
        if temperature > 0:
            probs = (
                logits_to_probs(row[None, :], temperature)[0]
                if shaping is None
                else shaping.probs(row, seq, temperature, self._columns())
            )
            token, q = draft_sample(
                probs, rng, self._net.config.target_vocab_size, self._columns().target_ids
            )
            prob_rows.append(q)
            return token
        if shaping is not None and shaping.moves_logits:
            return int(self._columns().target_ids[shaping.argmax(row, seq, self._columns())])
        return int(self._net.draft_to_target[int(torch.argmax(logits))])

    def _columns(self) -> TokenColumns:
        """The target id of each of the head's K columns (built at the first use)."""
        if self._token_columns is None:
            self._token_columns = TokenColumns.of(self._net.draft_to_target.cpu().numpy())
        return self._token_columns
