"""How a generation's output is chosen (:class:`SamplingParams`, checked as it is built)
and what it may come with (:class:`TokenLogprobs`); both cross every boundary (simulator,
server, drafter, wire)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from edgespec.core.penalties import additive_penalty_problem, repetition_penalty_problem
from edgespec.core.sampling_cuts import (
    logit_bias_problem,
    min_p_problem,
    top_k_problem,
    top_p_problem,
)
from edgespec.core.stop_rules import min_tokens_problem, stop_token_ids_problem
from edgespec.core.wire_limits import MAX_LOGPROBS, wire_float_problem


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """How the target's output is chosen. ``temperature == 0`` means greedy (argmax); when
    sampling, the row is cut to its ``top_k`` most likely tokens (0: all), then to its
    ``top_p`` nucleus, then to the tokens at least ``min_p`` times as likely as the likeliest
    (0: no cut), as :mod:`edgespec.core.sampling_cuts` orders them; ``logit_bias`` (token
    id, bias) pairs are added to the logits first, greedy too, then the penalties
    (``repetition_penalty``, ``frequency_penalty``, ``presence_penalty``:
    :mod:`edgespec.core.penalties`). ``ignore_eos``: the output runs to ``max_new_tokens``
    past any end of sequence the target commits (fixed lengths); ``stop_token_ids`` end it
    as an end of sequence does; ``min_tokens``: none of those before this many output
    tokens (:mod:`edgespec.core.stop_rules`). ``logprobs``: the output comes with each
    token's log-probability under the target's own distribution (its raw logits, before any
    bias, penalty, temperature or cut, as vLLM's default) and the ``logprobs`` likeliest
    tokens' (``None``: none; 0: the chosen token's alone). ``prompt_logprobs``: the same of
    each prompt token after the first, under the target's row before it (vLLM's; ``None``:
    none), returned with the session's first verification."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 128
    seed: int | None = None
    top_k: int = 0
    min_p: float = 0.0
    ignore_eos: bool = False
    logit_bias: tuple[tuple[int, float], ...] = ()
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    stop_token_ids: tuple[int, ...] = ()
    min_tokens: int = 0
    logprobs: int | None = None
    prompt_logprobs: int | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.temperature) or self.temperature < 0:
            raise ValueError(f"temperature must be finite and >= 0, got {self.temperature}")
        if (problem := wire_float_problem(self.temperature)) is not None:
            raise ValueError(f"temperature {problem}")
        if (problem := top_p_problem(self.top_p)) is not None:
            raise ValueError(f"top_p {problem}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        for name, problem in self._field_problems():
            if problem is not None:
                raise ValueError(f"{name} {problem}")

    def _field_problems(self) -> tuple[tuple[str, str | None], ...]:
        """Each checked field with what is wrong with it (``None``: nothing)."""
        return (
            ("top_k", top_k_problem(self.top_k)),
            ("min_p", min_p_problem(self.min_p)),
            ("logit_bias", logit_bias_problem(self.logit_bias)),
            ("repetition_penalty", repetition_penalty_problem(self.repetition_penalty)),
            ("frequency_penalty", additive_penalty_problem(self.frequency_penalty)),
            ("presence_penalty", additive_penalty_problem(self.presence_penalty)),
            ("stop_token_ids", stop_token_ids_problem(self.stop_token_ids)),
            ("min_tokens", min_tokens_problem(self.min_tokens, self.max_new_tokens)),
            ("logprobs", _logprobs_problem(self.logprobs)),
            ("prompt_logprobs", _logprobs_problem(self.prompt_logprobs)),
        )

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    @property
    def penalized(self) -> bool:
        """Whether a penalty may change a row (any of the three not off)."""
        return bool(self.repetition_penalty != 1.0 or self.frequency_penalty
                    or self.presence_penalty)  # fmt: skip


def _logprobs_problem(logprobs: int | None) -> str | None:
    if logprobs is not None and not 0 <= logprobs <= MAX_LOGPROBS:
        return f"must be None or in [0, {MAX_LOGPROBS}], got {logprobs}"
    return None


@dataclass(frozen=True, slots=True)
class TokenLogprobs:
    """One token's log-probability under the target, and the likeliest tokens'
    (``top``: (token id, log-probability) pairs, likeliest first, ties by token id)."""

    logprob: float
    top: tuple[tuple[int, float], ...] = ()
