"""A request's rules made on a drafter's own logit rows (:class:`DraftShaping`), so that it
proposes from the distribution the target's rows will be verified under: the request's
``logit_bias`` added, its penalties made (:mod:`edgespec.core.penalties`, counted over the
draft's context: prompt, output so far and the block drafted before the row), and, when
sampling, its top-k, top-p and min-p cuts (:func:`~edgespec.runtime.sampling.logits_to_probs`),
in the target's order. Only the proposals change: a greedy block is accepted as far as the
target's (penalized) argmax agrees, and a sampled block's q is the shaped distribution the
token was drawn from, so stochastic verification stays exact. Without shaping, a draft
proposing the token a repetition penalty forbids the target is rejected at nearly every
round.

A draft whose rows are not over the target's ids names each column's target id
(:class:`TokenColumns`, a trimmed-vocabulary draft); tokens the draft has no column for
(beyond a narrower draft's vocabulary) are left out of the bias and the counts. The stop
predictor's features are read from the unshaped rows, as traces store them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from edgespec.core.penalties import penalize_rows
from edgespec.core.sampling_params import SamplingParams
from edgespec.runtime.sampling import logits_to_probs


@dataclass(frozen=True, slots=True, eq=False)
class TokenColumns:
    """The target id of each column of a draft's rows (``target_ids``) and its inverse
    (``column_of[t]``: token t's column, -1 where none)."""

    target_ids: npt.NDArray[np.intp]
    column_of: npt.NDArray[np.intp]

    @classmethod
    def of(cls, target_ids: npt.NDArray[np.integer]) -> TokenColumns:
        ids = np.asarray(target_ids, dtype=np.intp)
        column_of = np.full(int(ids.max()) + 1 if ids.size else 0, -1, dtype=np.intp)
        column_of[ids] = np.arange(ids.size, dtype=np.intp)
        return cls(ids, column_of)


@dataclass(frozen=True, slots=True)
class DraftShaping:
    """What a drafter makes of each logit row before choosing from it: a request's
    ``logit_bias``, penalties and (sampling only) cuts; ``num_prompt_tokens``: how many of
    the context's first tokens are the prompt (the rest count as output)."""

    num_prompt_tokens: int
    logit_bias: tuple[tuple[int, float], ...] = ()
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0

    @property
    def moves_logits(self) -> bool:
        """Whether the logits change (a bias or a penalty): a greedy draft's argmax may."""
        return bool(self.logit_bias or self.repetition_penalty != 1.0
                    or self.frequency_penalty or self.presence_penalty)  # fmt: skip

    def logits(
        self,
        row: npt.NDArray[np.float32],
        context: Sequence[int],
        columns: TokenColumns | None = None,
    ) -> npt.NDArray[np.float32]:
        """``row`` (the draft's logits after ``context``, one per column) biased and
        penalized, a copy."""
        out = np.array(row, dtype=np.float32, copy=True)
        if self.logit_bias:
            ids = _columns(np.array([t for t, _ in self.logit_bias], dtype=np.intp), columns,
                           out.shape[-1])  # fmt: skip
            biases = np.array([b for _, b in self.logit_bias], dtype=np.float32)
            out[ids[ids >= 0]] += biases[ids >= 0]
        if self.repetition_penalty != 1.0 or self.frequency_penalty or self.presence_penalty:
            mapped = _columns(np.asarray(context, dtype=np.intp), columns, out.shape[-1])
            kept = mapped >= 0
            num_prompt = int(kept[: self.num_prompt_tokens].sum())
            penalize_rows(out[None, :], mapped[kept], num_prompt, [()], self.repetition_penalty,
                          self.frequency_penalty, self.presence_penalty)  # fmt: skip
        return out

    def probs(
        self,
        row: npt.NDArray[np.float32],
        context: Sequence[int],
        temperature: float,
        columns: TokenColumns | None = None,
    ) -> npt.NDArray[np.float64]:
        """The distribution a sampling draft draws from after ``context``: the shaped
        logits at ``temperature``, cut."""
        logits = self.logits(row, context, columns) if self.moves_logits else row
        probs: npt.NDArray[np.float64] = logits_to_probs(
            logits[None, :], temperature, top_p=self.top_p, top_k=self.top_k, min_p=self.min_p
        )[0]
        return probs

    def argmax(
        self,
        row: npt.NDArray[np.float32],
        context: Sequence[int],
        columns: TokenColumns | None = None,
    ) -> int:
        """The column a greedy draft proposes after ``context`` (cuts keep the argmax)."""
        return int(np.argmax(self.logits(row, context, columns)))


def draft_shaping(sampling: SamplingParams, num_prompt_tokens: int) -> DraftShaping | None:
    """The shaping a request's ``sampling`` asks of its drafts, ``None`` when it changes
    nothing (no bias or penalty, and greedy or no cut): the drafter's rows as they are."""
    shaping = DraftShaping(
        num_prompt_tokens=num_prompt_tokens,
        logit_bias=sampling.logit_bias,
        repetition_penalty=sampling.repetition_penalty,
        frequency_penalty=sampling.frequency_penalty,
        presence_penalty=sampling.presence_penalty,
        top_k=0 if sampling.greedy else sampling.top_k,
        top_p=1.0 if sampling.greedy else sampling.top_p,
        min_p=0.0 if sampling.greedy else sampling.min_p,
    )
    cuts = shaping.top_k > 0 or shaping.top_p < 1.0 or shaping.min_p > 0.0
    return shaping if shaping.moves_logits or cuts else None


def _columns(
    tokens: npt.NDArray[np.intp], columns: TokenColumns | None, width: int
) -> npt.NDArray[np.intp]:
    """Each of ``tokens``' column in rows ``width`` wide, -1 where the draft has none."""
    if columns is None:
        return np.where(tokens < width, tokens, -1)
    inside = tokens < columns.column_of.size
    return np.where(inside, columns.column_of[np.where(inside, tokens, 0)], -1)
