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


def repetition_penalty_problem(value: float) -> str | None:
    """Why ``value`` is no repetition penalty (a finite number above 0)."""
    if not (math.isfinite(value) and value > 0):
        return f"must be a finite number above 0 (1: off), got {value:g}"
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
            values = row[ids]
            row[ids] = np.where(values > 0, values / np.float32(repetition),
                                values * np.float32(repetition))  # fmt: skip
        if frequency or presence:
            ids, where = np.unique(np.concatenate([output_ids, extra]), return_inverse=True)
            weights = np.concatenate([output_counts, np.ones(len(extra), dtype=np.intp)])
            counts = np.bincount(where, weights=weights)  # whole numbers, exact in float64
            row[ids] -= (frequency * counts + presence).astype(np.float32)
