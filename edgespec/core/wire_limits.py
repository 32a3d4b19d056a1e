"""The numbers the wire (:mod:`edgespec.runtime.proto`) can carry, held at every entry:
the config fields, command-line flags and request bodies that become them are checked
against these before anything is sent."""

from __future__ import annotations

SEED_LIMIT = 2**63
"""Seeds are ``0 <= seed < 2**63``: what numpy, torch and the wire's uint64 all take (the
command line's ``--seed`` flags, a drafter's ``link_seed`` and the OpenAI endpoint's
``seed`` are held to it)."""

UINT32_LIMIT = 2**32
"""Token ids and ``max_new_tokens`` are below this: the wire carries them as uint32."""

DRAFT_SUPPORT_MAX_TOKENS = 1024
"""The most entries a drafted token's compact distribution keeps (a sampling drafter's
support: :func:`edgespec.runtime.sampling.draft_sample`), so the most a compact row
carries."""

MIN_WIRE_FLOAT = 2.0**-126
"""The least temperature or top_p above 0: float32's least normal number. The wire rounds
less to 0, read by the server as greedy (temperature) or unset, i.e. 1 (top_p)."""


def wire_float_problem(value: float) -> str | None:
    """Why a temperature or top_p of ``value`` would not reach the server as it is."""
    if 0 < value < MIN_WIRE_FLOAT:
        return (
            f"must not be below {MIN_WIRE_FLOAT:.4g} unless 0 (the wire's float32), got {value:g}"
        )
    return None


MAX_LOGPROBS = 20
"""The most alternatives a generation asks the log-probabilities of, beside each chosen
token's (OpenAI's ``top_logprobs`` limit)."""
