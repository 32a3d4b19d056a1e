"""The cuts a sampled row takes after its temperature, in the order Hugging Face's and
vLLM's samplers make them: top-k (the ``top_k`` most likely tokens), then top-p over what
top-k kept (the nucleus), then min-p (the tokens at least ``min_p`` times as likely as the
likeliest). Their ranges, checked wherever they enter (:class:`~edgespec.core.types.SamplingParams`,
the drafter's config, the OpenAI endpoint); the cuts themselves are
:func:`edgespec.runtime.sampling.logits_to_probs`."""

from __future__ import annotations

import math

from edgespec.core.wire_limits import UINT32_LIMIT, wire_float_problem


def top_k_problem(top_k: object) -> str | None:
    """Why ``top_k`` is no count of tokens the wire carries (its uint32; 0: every token)."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 0 <= top_k < UINT32_LIMIT:
        return f"must be a whole number in [0, 2**32) (0: every token), got {top_k!r}"
    return None


def min_p_problem(min_p: float) -> str | None:
    """Why ``min_p`` is no fraction of the likeliest token's probability the wire carries
    as it is (0: no cut)."""
    if not (math.isfinite(min_p) and 0 <= min_p <= 1):
        return f"must be in [0, 1] (0: no cut), got {min_p:g}"
    return wire_float_problem(min_p)


def cuts_on(top_p: float, top_k: int, min_p: float) -> tuple[str, ...]:
    """The names of the cuts that may change a row (``top_p`` below 1, ``top_k`` above 0,
    ``min_p`` above 0), in the order they are made: what greedy decoding would not apply."""
    on = (("top_k", top_k > 0), ("top_p", top_p < 1), ("min_p", min_p > 0))
    return tuple(name for name, given in on if given)
