"""Repetition, frequency and presence penalties, as vLLM makes them: on a row's logits,
after the ``logit_bias`` and before the temperature and the cuts, greedy decoding included.

In this order (:func:`penalize_rows`):

1. ``repetition_penalty`` (Hugging Face's, > 0; 1: off) on every token of the context so
   far, prompt and output: a positive logit is divided by it, any other multiplied;
2. ``frequency_penalty`` (OpenAI's, in [-2, 2]; 0: off) times the token's count in the
   output so far is subtracted;
3. ``presence_penalty`` (OpenAI's, in [-2, 2]; 0: off) is subtracted from every token the
   output holds.

"The output so far" at a verification row is what the generation committed after its
prompt and the draft tokens before that row: a reopened session, whose prompt ends with
the output committed before it, says how many of its prompt tokens were output.
The ranges are checked wherever the penalties enter
(:class:`~edgespec.core.types.SamplingParams`, the drafter's flags, the OpenAI endpoint)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

MAX_PENALTY = 2.0
"""A frequency or presence penalty is in [-2, 2] (OpenAI's range)."""


def additive_penalty_problem(value: float) -> str | None:
    """Why ``value`` is no frequency or presence penalty (a number in [-2, 2])."""
    if not (math.isfinite(value) and -MAX_PENALTY <= value <= MAX_PENALTY):
        return f"must be in [-2, 2] (0: off), got {value:g}"
    return None


MIN_REPETITION = 2.0**-126
"""The least repetition penalty: float32's least normal number (a row's logits are float32)."""
MAX_REPETITION = float(np.finfo(np.float32).max)
"""The largest repetition penalty: float32's largest number."""


def repetition_penalty_problem(value: float) -> str | None:
    """Why ``value`` is no repetition penalty (a number in float32's normal range,
    [:data:`MIN_REPETITION`, :data:`MAX_REPETITION`]: a row's float32 logits are divided or
    multiplied by it)."""
    if not (math.isfinite(value) and MIN_REPETITION <= value <= MAX_REPETITION):
        within = f"must be in [{MIN_REPETITION:.4g}, {MAX_REPETITION:.4g}]"
        return f"{within} (float32's normal range; 1: off), got {value:g}"
    return None


def penalize_rows(
    rows: npt.NDArray[np.float32],
    context: Sequence[int] | npt.NDArray[np.intp],
    num_prompt_tokens: int,
    paths: Sequence[Sequence[int]],
    repetition: float,
    frequency: float,
    presence: float,
) -> None:
    """Penalize each of ``rows``, in place, in the module's order: row j after ``context``
    (the prompt's first ``num_prompt_tokens`` tokens, then the output so far) and then
    ``paths[j]`` (more output). The context's tokens are counted once for all rows."""
    tokens = np.asarray(context, dtype=np.intp)
    seen = np.unique(tokens) if repetition != 1.0 else tokens[:0]
    output_ids, output_counts = np.unique(tokens[num_prompt_tokens:], return_counts=True)
    for row, path in zip(rows, paths, strict=True):
        extra = np.asarray(path, dtype=np.intp)
        if repetition != 1.0:
            ids = np.union1d(seen, extra)
            row[ids] = _repeated(row[ids], repetition)
        if frequency or presence:
            ids, where = np.unique(np.concatenate([output_ids, extra]), return_inverse=True)
            weights = np.concatenate([output_counts, np.ones(len(extra), dtype=np.intp)])
            counts = np.bincount(where, weights=weights)  # whole numbers, exact in float64
            row[ids] -= (frequency * counts + presence).astype(np.float32)


def _repeated(values: npt.NDArray[np.float32], repetition: float) -> npt.NDArray[np.float32]:
    """``values`` under the repetition penalty, in float64 and rounded to float32 once (the
    float32 division's result, exactly), a positive logit at most float32's largest: a
    penalty near 0 would make it +inf, and a row holding +inf samples as NaN."""
    penalty = np.float64(np.float32(repetition))
    wide = values.astype(np.float64)
    scaled = np.where(wide > 0, np.minimum(wide / penalty, MAX_REPETITION), wide * penalty)
    with np.errstate(over="ignore"):  # a negative logit past float32: −inf, as float32 gives
        return scaled.astype(np.float32)
