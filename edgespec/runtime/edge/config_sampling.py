"""How a ``DrafterConfig``'s generations are sampled, checked once as it is built: the token
budget, the temperature and the cuts after it (:mod:`edgespec.core.sampling_cuts`), each as
the wire carries it, the penalties (:mod:`edgespec.core.penalties`) and where the output may
end (:mod:`edgespec.core.stop_rules`: stop ids, ``min_tokens``, stop sequences)."""

from __future__ import annotations

import math
from collections import Counter

from edgespec.config import ConfigError
from edgespec.core.penalties import additive_penalty_problem, repetition_penalty_problem
from edgespec.core.sampling_cuts import cuts_on, logit_bias_problem, min_p_problem, top_k_problem
from edgespec.core.stop_rules import (
    min_tokens_problem,
    stop_sequences_problem,
    stop_token_ids_problem,
)
from edgespec.core.wire_limits import UINT32_LIMIT, wire_float_problem

MAX_TEMPERATURE = 1000.0
"""The highest ``temperature``: far above any useful one (a model's logits, a few tens
apart, scale to within a few hundredths: sampling is all but uniform), and inside the
float32 the wire carries it in (1e39 reached the server as inf, and was refused as that)."""


def check_sampling(
    max_new_tokens: int, temperature: float, top_p: float, top_k: int, min_p: float
) -> None:
    """A :class:`ConfigError` at the first field out of its range, or at a cut (``top_k``,
    ``top_p``, ``min_p``) given at temperature 0, where greedy decoding would ignore it."""
    if max_new_tokens < 1:
        raise ConfigError("max_new_tokens", f"must be >= 1, got {max_new_tokens}")
    if max_new_tokens >= UINT32_LIMIT:
        raise ConfigError(
            "max_new_tokens", f"must be below 2**32 (the wire's uint32), got {max_new_tokens}"
        )
    if not (math.isfinite(temperature) and temperature >= 0):
        raise ConfigError("temperature", f"must be a finite number >= 0, got {temperature}")
    if temperature > MAX_TEMPERATURE:
        raise ConfigError(
            "temperature", f"must be at most {MAX_TEMPERATURE:g}, got {temperature:g}"
        )
    if (problem := wire_float_problem(temperature)) is not None:
        raise ConfigError("temperature", problem)
    if not (math.isfinite(top_p) and 0 < top_p <= 1):
        raise ConfigError("top_p", f"must be in (0, 1], got {top_p:g}")
    if (problem := wire_float_problem(top_p)) is not None:
        raise ConfigError("top_p", problem)
    if (problem := top_k_problem(top_k)) is not None:
        raise ConfigError("top_k", problem)
    if (problem := min_p_problem(min_p)) is not None:
        raise ConfigError("min_p", problem)
    if temperature == 0 and (given := cuts_on(top_p, top_k, min_p)):
        value = {"top_p": f"{top_p:g}", "top_k": str(top_k), "min_p": f"{min_p:g}"}[given[0]]
        raise ConfigError(given[0], f"{value} does nothing at temperature 0 (greedy): give a "
                          f"temperature > 0 to sample with {given[0]}")  # fmt: skip


def check_penalties(repetition: float, frequency: float, presence: float) -> None:
    """A :class:`ConfigError` at the first penalty out of its range."""
    for name, problem in (("repetition_penalty", repetition_penalty_problem(repetition)),
                          ("frequency_penalty", additive_penalty_problem(frequency)),
                          ("presence_penalty", additive_penalty_problem(presence))):  # fmt: skip
        if problem is not None:
            raise ConfigError(name, problem)


def check_stops(
    stop_token_ids: tuple[int, ...],
    min_tokens: int,
    max_new_tokens: int,
    stop: tuple[str, ...] = (),
) -> None:
    """A :class:`ConfigError` for stop ids the wire cannot carry (any order; each once), a
    ``min_tokens`` beyond the budget or ``stop`` sequences out of range (at most 4, each
    1..256 characters)."""
    if (problem := stop_sequences_problem(stop)) is not None:
        raise ConfigError("stop", problem)
    twice = sorted(t for t, n in Counter(stop_token_ids).items() if n > 1)
    if twice:
        raise ConfigError("stop_token_ids", f"names token {twice[0]} more than once")
    if (problem := stop_token_ids_problem(tuple(sorted(stop_token_ids)))) is not None:
        raise ConfigError("stop_token_ids", problem)
    if (problem := min_tokens_problem(min_tokens, max_new_tokens)) is not None:
        raise ConfigError("min_tokens", problem)


def check_logit_bias(logit_bias: tuple[tuple[int, float], ...]) -> None:
    """A :class:`ConfigError` for (token id, bias) pairs the wire cannot carry: a token named
    twice, more than 300 tokens, a bias outside [-100, 100] (any order)."""
    twice = sorted(t for t, n in Counter(t for t, _ in logit_bias).items() if n > 1)
    if twice:
        raise ConfigError("logit_bias", f"names token {twice[0]} more than once")
    if (problem := logit_bias_problem(tuple(sorted(logit_bias)))) is not None:
        raise ConfigError("logit_bias", problem)
