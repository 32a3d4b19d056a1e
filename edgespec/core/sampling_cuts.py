"""The cuts a sampled row takes after its temperature, in the order Hugging Face's and
vLLM's samplers make them: top-k (the ``top_k`` most likely tokens), then top-p over what
top-k kept (the nucleus), then min-p (the tokens at least ``min_p`` times as likely as the
likeliest). Their ranges, and a ``logit_bias``'s (added to the logits before all of them, greedy
decoding included), checked wherever they enter (:class:`~edgespec.core.types.SamplingParams`,
the drafter's config, the OpenAI endpoint); the cuts themselves are
:func:`edgespec.runtime.sampling.logits_to_probs`."""

from __future__ import annotations

import math
from dataclasses import dataclass

from edgespec.core.wire_limits import UINT32_LIMIT, wire_float_problem


def top_k_problem(top_k: object) -> str | None:
    """Why ``top_k`` is no count of tokens the wire carries (its uint32; 0: every token)."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 0 <= top_k < UINT32_LIMIT:
        return f"must be a whole number in [0, 2**32) (0: every token), got {top_k!r}"
    return None


def top_p_problem(top_p: float) -> str | None:
    """Why ``top_p`` is no nucleus mass the wire carries as it is (1: no cut)."""
    if not 0 < top_p <= 1:  # NaN too
        return f"must be in (0, 1], got {top_p}"
    return wire_float_problem(top_p)


def min_p_problem(min_p: float) -> str | None:
    """Why ``min_p`` is no fraction of the likeliest token's probability the wire carries
    as it is (0: no cut)."""
    if not (math.isfinite(min_p) and 0 <= min_p <= 1):
        return f"must be in [0, 1] (0: no cut), got {min_p:g}"
    return wire_float_problem(min_p)


MAX_LOGIT_BIAS = 300
"""The most tokens a ``logit_bias`` names (OpenAI's limit)."""

MAX_BIAS = 100.0
"""A bias is in [-100, 100], added to its token's logit (OpenAI's range: -100 all but bans
the token, 100 all but forces it)."""


def logit_bias_problem(logit_bias: tuple[tuple[int, float], ...]) -> str | None:
    """Why ``logit_bias`` ((token id, bias) pairs, ids ascending, each once) is not one the
    wire carries: too many ids, an id over its uint32, a bias out of range or not finite."""
    if len(logit_bias) > MAX_LOGIT_BIAS:
        return f"names at most {MAX_LOGIT_BIAS} tokens, got {len(logit_bias)}"
    ids = [token for token, _ in logit_bias]
    if ids != sorted(set(ids)) or any(not 0 <= t < UINT32_LIMIT for t in ids):
        return f"must name token ids in [0, 2**32) once each, ascending, got {ids[:5]}"
    bad = [b for _, b in logit_bias if not (math.isfinite(b) and -MAX_BIAS <= b <= MAX_BIAS)]
    if bad:
        return f"biases must be in [-100, 100], got {bad[0]:g}"
    return None


def cuts_on(top_p: float, top_k: int, min_p: float) -> tuple[str, ...]:
    """The names of the cuts that may change a row (``top_p`` below 1, ``top_k`` above 0,
    ``min_p`` above 0), in the order they are made: what greedy decoding would not apply."""
    on = (("top_k", top_k > 0), ("top_p", top_p < 1), ("min_p", min_p > 0))
    return tuple(name for name, given in on if given)


@dataclass(frozen=True, slots=True)
class SamplingCuts:
    """The cuts a sampled row takes (each off by default), as a run names them: a scenario
    (``top_k``, ``top_p``, ``min_p``) or a sampled trace's capture."""

    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0

    def cutting(self) -> dict[str, float]:
        """The cuts that cut (:func:`cuts_on`), by name, in the order they are made."""
        values = {"top_k": self.top_k, "top_p": self.top_p, "min_p": self.min_p}
        return {name: values[name] for name in cuts_on(self.top_p, self.top_k, self.min_p)}

    def described(self) -> str:
        """The cuts that cut, as ``top-k 40, top-p 0.9`` (empty when none does)."""
        return ", ".join(f"{name.replace('_', '-')} {v:g}" for name, v in self.cutting().items())
