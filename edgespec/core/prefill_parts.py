"""The size of a prefill part, one rule for both hosts (the server's
:mod:`edgespec.runtime.server.prefill_parts`, the simulator's
:mod:`edgespec.sim.loop.batch_choice`): a verification of K draft tokens over U uncached
context tokens is one pass when U + K ≤ P (``prefill_part_tokens``); otherwise its
next pass forwards only min(P, U − 1) context tokens (the newest committed token always
stays for the last pass), and only when its whole context fits the KV budget (one that
does not could never finish in parts)."""

from __future__ import annotations


def part_tokens(
    num_uncached: int, num_draft: int, part_limit: int | None, fits_budget: bool
) -> int | None:
    """How many uncached context tokens the next pass forwards alone (a part), or ``None``
    when the verification is one pass (it fits ``part_limit``, there is no limit, its
    context does not fit the KV budget, or only the newest token is uncached)."""
    if part_limit is None or not fits_budget or num_uncached + num_draft <= part_limit:
        return None
    return min(part_limit, num_uncached - 1) or None
