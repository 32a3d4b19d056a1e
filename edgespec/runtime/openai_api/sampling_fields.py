"""A request's sampling fields, checked into :class:`SamplingFields`: ``temperature`` and
the cuts after it, ``top_k``, ``top_p`` and ``min_p`` (:mod:`edgespec.core.sampling_cuts`,
made in that order), ``logit_bias`` and the penalties before them
(:mod:`edgespec.core.penalties`), ``min_tokens``, ``n`` and the log-probabilities asked for
(``logprobs``: an integer on ``/v1/completions``, chat's boolean with ``top_logprobs``; 0
to 20 alternatives; with ``echo``, the prompt's tokens' too); a bad one is a 400 naming it
(``param``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgespec.core.penalties import repetition_penalty_problem
from edgespec.core.sampling_cuts import MAX_BIAS, MAX_LOGIT_BIAS, cuts_on
from edgespec.core.types import SamplingParams
from edgespec.core.wire_limits import MAX_LOGPROBS, UINT32_LIMIT, wire_float_problem
from edgespec.runtime.openai_api.errors import invalid, shown


@dataclass(frozen=True, slots=True)
class SamplingFields:
    """How one request samples: greedy at ``temperature`` 0, the cuts then all off."""

    temperature: float
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    logit_bias: tuple[tuple[int, float], ...] = ()  # token ids ascending
    penalties: tuple[float, float, float] = (1.0, 0.0, 0.0)  # repetition, frequency, presence

    def params(
        self,
        max_tokens: int,
        seed: int | None,
        ignore_eos: bool,
        stop_token_ids: frozenset[int] = frozenset(),
        min_tokens: int = 0,
        logprobs: int | None = None,
        echo: bool = False,
    ) -> SamplingParams:
        """The session's :class:`SamplingParams`: these fields and the request's others
        (``echo`` with ``logprobs``: the prompt's log-probabilities too)."""
        return SamplingParams(
            temperature=self.temperature,
            top_p=self.top_p,
            max_new_tokens=max_tokens,
            seed=seed,
            top_k=self.top_k,
            min_p=self.min_p,
            ignore_eos=ignore_eos,
            logit_bias=self.logit_bias,
            repetition_penalty=self.penalties[0],
            frequency_penalty=self.penalties[1],
            presence_penalty=self.penalties[2],
            stop_token_ids=tuple(sorted(stop_token_ids)),
            min_tokens=min_tokens,
            logprobs=logprobs,
            prompt_logprobs=logprobs if echo else None,
        )


def number_field(
    body: Mapping[str, Any], name: str, default: float, low: float, high: float
) -> float:
    """Field ``name`` of ``body``, a finite JSON number in [``low``, ``high``] (``default``
    when absent or null)."""
    value = body.get(name)
    if value is None:
        return default
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise invalid(f"{name} must be a number, got {shown(value)}", param=name)
    if not low <= value <= high:  # an int of any size compares exactly, unconverted
        raise invalid(f"{name} must be in [{low}, {high}], got {shown(value)}", param=name)
    return float(value)


def integer_field(body: Mapping[str, Any], name: str, default: int | None) -> int | None:
    """Field ``name`` of ``body``, a JSON integer (``default`` when absent or null)."""
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f"{name} must be an integer, got {shown(value)}", param=name)
    return value


def _top_k(body: Mapping[str, Any]) -> int:
    """``top_k`` as vLLM takes it: -1 or 0 (every token) or a count of tokens."""
    top_k = integer_field(body, "top_k", 0)
    assert top_k is not None
    if not -1 <= top_k < UINT32_LIMIT:
        raise invalid(f"top_k must be -1 or 0 (every token) or a count of tokens below 2**32, "
                      f"got {shown(top_k)}", param="top_k")  # fmt: skip
    return max(top_k, 0)


def _logit_bias(body: Mapping[str, Any]) -> tuple[tuple[int, float], ...]:
    """``logit_bias`` as OpenAI takes it: an object of at most ``MAX_LOGIT_BIAS`` token ids
    (decimal strings) to biases in [-100, 100], added to the logits (greedy too)."""
    value = body.get("logit_bias")
    if value is None:
        return ()
    if not isinstance(value, dict) or len(value) > MAX_LOGIT_BIAS:
        raise invalid(f"logit_bias must be an object of at most {MAX_LOGIT_BIAS} token ids to "
                      f"biases, got {shown(value)}", param="logit_bias")  # fmt: skip
    pairs = []
    for key, bias in value.items():
        if not (key.isascii() and key.isdecimal() and len(key) <= 10 and int(key) < UINT32_LIMIT):
            raise invalid(f"logit_bias keys are token ids, got {shown(key)}", param="logit_bias")
        number = isinstance(bias, int | float) and not isinstance(bias, bool)
        if not (number and -MAX_BIAS <= bias <= MAX_BIAS):  # NaN compares false
            raise invalid(f"logit_bias[{shown(key)}] must be a number in [-100, 100], got "
                          f"{shown(bias)}", param="logit_bias")  # fmt: skip
        pairs.append((int(key), float(bias)))
    if len({t for t, _ in pairs}) < len(pairs):  # "7" and "07"
        raise invalid("logit_bias names a token twice", param="logit_bias")
    return tuple(sorted(pairs))


MAX_CHOICES = 16
"""The most choices (``n``) a request asks for: each is generated in turn, a whole
generation's work."""


def parse_num_choices(body: Mapping[str, Any]) -> int:
    """``n``: how many choices, 1 to :data:`MAX_CHOICES` (and not over a ``best_of`` given,
    OpenAI's rule: each choice is one of ``best_of`` candidates)."""
    n = integer_field(body, "n", 1)
    assert n is not None
    if not 1 <= n <= MAX_CHOICES:
        raise invalid(f"n must be in [1, {MAX_CHOICES}], got {shown(n)}", param="n")
    best_of = body.get("best_of")  # null or 1 here (check_fields)
    if best_of is not None and best_of < n:
        raise invalid(f"best_of must be at least n, got best_of {shown(best_of)} with n {n} "
                      "(this endpoint takes best_of null or 1)", param="best_of")  # fmt: skip
    return n


def _count(body: Mapping[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LOGPROBS:
        raise invalid(f"{name} must be an integer in [0, {MAX_LOGPROBS}], got {shown(value)}",
                      param=name)  # fmt: skip
    return value


def parse_logprobs(body: Mapping[str, Any], chat: bool) -> int | None:
    """How many alternatives each returned token's log-probability comes with (``None``:
    none asked). In chat ``logprobs: true`` asks, ``top_logprobs`` (only with it) counts."""
    if not chat:
        asked = _count(body, "logprobs")
    else:
        flag, top = body.get("logprobs"), _count(body, "top_logprobs")
        if flag is not None and not isinstance(flag, bool):
            raise invalid(f"logprobs must be a boolean, got {shown(flag)}", param="logprobs")
        if top is not None and not flag:
            raise invalid("top_logprobs needs logprobs: true", param="top_logprobs")
        asked = (top or 0) if flag else None
    return asked


def parse_min_tokens(body: Mapping[str, Any], max_tokens: int) -> int:
    """``min_tokens`` (vLLM's): no end of sequence, stop token or stop sequence before this
    many output tokens; in [0, ``max_tokens``]."""
    min_tokens = integer_field(body, "min_tokens", 0)
    assert min_tokens is not None
    if not 0 <= min_tokens <= max_tokens:
        raise invalid(f"min_tokens must be in [0, max_tokens = {max_tokens}], got "
                      f"{shown(min_tokens)}", param="min_tokens")  # fmt: skip
    return min_tokens


def _penalties(body: Mapping[str, Any]) -> tuple[float, float, float]:
    """``repetition_penalty`` (vLLM's: above 0, 1 off; at most float32's normal range,
    :func:`~edgespec.core.penalties.repetition_penalty_problem`), ``frequency_penalty`` and
    ``presence_penalty`` (OpenAI's: in [-2, 2], 0 off); greedy decoding takes them too."""
    repetition = number_field(body, "repetition_penalty", 1.0, -math.inf, math.inf)
    if (problem := repetition_penalty_problem(repetition)) is not None:
        raise invalid(f"repetition_penalty {problem}", param="repetition_penalty")
    frequency = number_field(body, "frequency_penalty", 0.0, -2.0, 2.0)
    return repetition, frequency, number_field(body, "presence_penalty", 0.0, -2.0, 2.0)


def parse_sampling(body: Mapping[str, Any], default_temperature: float) -> SamplingFields:
    """``temperature`` (default ``default_temperature``: the config's, not OpenAI's 1),
    ``top_k``, ``top_p`` in [0, 1] as OpenAI takes it, ``min_p`` in [0, 1]. A ``top_p`` of 0
    keeps only the most likely token: greedy, so temperature 0 and every cut off (each cut
    keeps the most likely token: greedy is what they all give then; the core's top_p is in
    (0, 1], and the wire reads a top_p of 0 as unset, i.e. 1). At a ``temperature`` of 0
    given, the cuts are taken and change nothing (greedy; OpenAI takes them, vLLM turns them
    off: clients keep a preset's top_p when the user picks temperature 0); a cut without a
    temperature, at the endpoint's default of 0, asked to sample: refused,
    ``unsupported_value`` as :mod:`.fields`' refusals."""
    temperature = number_field(body, "temperature", default_temperature, 0.0, 2.0)
    top_p = number_field(body, "top_p", 1.0, 0.0, 1.0)
    top_k = _top_k(body)
    min_p = number_field(body, "min_p", 0.0, 0.0, 1.0)
    for name, value in (("temperature", temperature), ("top_p", top_p), ("min_p", min_p)):
        if (problem := wire_float_problem(value)) is not None:
            raise invalid(f"{name} {problem}", param=name)
    given = cuts_on(top_p if top_p > 0 else 1.0, top_k, min_p)
    if temperature == 0 and given and body.get("temperature") is None:
        name = given[0]
        raise invalid(f"{name} {shown(body[name])} does nothing at temperature 0 (greedy), this "
                      "endpoint's default when a request gives none: give a temperature > 0 "
                      f"to sample with {name}", param=name, code="unsupported_value")  # fmt: skip
    bias, penalties = _logit_bias(body), _penalties(body)
    if top_p == 0 or temperature == 0:
        return SamplingFields(0.0, logit_bias=bias, penalties=penalties)
    return SamplingFields(temperature, top_p, top_k, min_p, bias, penalties)
