"""Repetition, frequency and presence penalties, as vLLM makes them: on a row's logits,
after the ``logit_bias`` and before the temperature and the cuts, greedy decoding included.

In this order (:func:`penalize_row`):

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


def penalize_row(
    row: npt.NDArray[np.float32],
    context: Sequence[int],
    num_prompt_tokens: int,
    repetition: float,
    frequency: float,
    presence: float,
) -> None:
    """Penalize one row of logits, in place, after ``context`` (the prompt's first
    ``num_prompt_tokens`` tokens, then the output so far), in the module's order."""
    if repetition != 1.0 and context:
        seen = np.unique(np.asarray(context, dtype=np.intp))
        values = row[seen]
        row[seen] = np.where(values > 0, values / np.float32(repetition),
                             values * np.float32(repetition))  # fmt: skip
    output = context[num_prompt_tokens:]
    if (frequency or presence) and output:
        ids, counts = np.unique(np.asarray(output, dtype=np.intp), return_counts=True)
        row[ids] -= (frequency * counts + presence).astype(np.float32)
