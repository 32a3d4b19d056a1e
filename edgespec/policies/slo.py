"""Verification deadlines and the acceptance estimate behind them, one copy for both hosts.

A queued verification carries a deadline (``PendingVerification.deadline_s``) by which its
batch must have finished for the session to keep its SLO class's token speed s_c (tok/s).
Two rules, chosen by name (scenario ``deadline_rule``, server ``deadline_rule``):

``pace`` — the request's committed tokens must keep pace with its class from the moment it
    started: d = start + (committed + 1) / s_c. A request that fell behind stays urgent.

``token_speed`` — WISP Eqs. 4–6 and 12, per round. The server's budget for queueing plus
    verification is τ = α̂·N_d / s_c − T_draft − T_network, and d = a + τ with a the arrival
    at the server. Here:

    * α̂ is the session's online acceptance estimate (:func:`acceptance_estimate`: accepted /
      drafted so far, shrunk towards a prior while little is known), so N̂ᵛ = α̂·N_d is the
      expected number of *accepted* draft tokens (Eq. 5; the extra target token is not
      counted, as in the paper);
    * T_draft is the drafting time of this block and T_network the client's last measured
      network time (uplink + downlink of its previous round, 0 before its first): what the
      server can know when the block arrives. Both are reported by the client (the real
      drafter measures them; the simulator knows them).

    τ may be negative (the client already spent its budget): the deadline is then in the
    past and a deadline-aware scheduler treats the round as late.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

DeadlineRule = Literal["pace", "token_speed"]
DEADLINE_RULES: tuple[DeadlineRule, ...] = ("pace", "token_speed")

MIN_TOKENS_PER_S = 1e-6
"""The slowest token-speed target s_c a class may have: below it a deadline's
committed / s_c overflows to infinity (a target of 1e-306 tok/s did)."""


def token_speed_target_problem(tokens_per_s: float | None) -> str | None:
    """Why ``tokens_per_s`` cannot be an SLO class's target (``None``: it can; a class
    without a target is ``None`` too). One check for the scenario and the server."""
    if tokens_per_s is None:
        return None
    if not 0 < tokens_per_s < math.inf:
        return f"must be a finite number > 0 or null, got {tokens_per_s}"
    if tokens_per_s < MIN_TOKENS_PER_S:
        return (
            f"must be at least {MIN_TOKENS_PER_S:g} tok/s (a slower target's deadlines are "
            f"not finite) or null, got {tokens_per_s:g}"
        )
    return None


ACCEPTANCE_PRIOR = 0.7
"""α̂ before a session has drafted anything (and what little evidence is shrunk towards)."""
ACCEPTANCE_PRIOR_TOKENS = 4.0
"""Weight of the prior, in drafted tokens: after 4 drafted tokens evidence and prior weigh
the same."""


def acceptance_estimate(
    num_drafted: int,
    num_accepted: int,
    prior: float = ACCEPTANCE_PRIOR,
    prior_tokens: float = ACCEPTANCE_PRIOR_TOKENS,
) -> float:
    """α̂ = (accepted + prior·w) / (drafted + w): the session's acceptance rate so far,
    shrunk towards ``prior`` with the weight of ``prior_tokens`` drafted tokens."""
    return (num_accepted + prior * prior_tokens) / (num_drafted + prior_tokens)


def pace_deadline_s(start_s: float, num_committed: int, tokens_per_s: float) -> float:
    """``pace``: start + (committed + 1) / s_c."""
    return start_s + (num_committed + 1) / tokens_per_s


def token_speed_budget_s(
    expected_accepted: float, tokens_per_s: float, draft_s: float, network_s: float
) -> float:
    """Eq. 6: τ = N̂ᵛ / s_c − T_draft − T_network (may be negative)."""
    return expected_accepted / tokens_per_s - draft_s - network_s


DeadlineFunction = Callable[[float, float, float, int, float, float, float], float]
"""A rule's deadline from (tokens_per_s, arrival_s, start_s, num_committed,
expected_accepted, draft_s, network_s), all positional (hosts call it per round)."""


# Parameters: (s_c, arrival, start, committed, N̂ᵛ, T_draft, T_network), as DeadlineFunction.
DEADLINE_FUNCTIONS: dict[DeadlineRule, DeadlineFunction] = {
    "pace": lambda s_c, a, start, committed, n, d, w: start + (committed + 1) / s_c,
    "token_speed": lambda s_c, a, start, committed, n, d, w: a + token_speed_budget_s(n, s_c, d, w),
}
"""Each rule's deadline as a :data:`DeadlineFunction` (what :func:`verification_deadline_s`
computes, for a class with a token-speed target): ``pace`` is :func:`pace_deadline_s`,
``token_speed`` the arrival plus :func:`token_speed_budget_s`."""


def verification_deadline_s(
    rule: DeadlineRule,
    tokens_per_s: float | None,
    *,
    arrival_s: float,
    start_s: float,
    num_committed: int,
    expected_accepted: float,
    draft_s: float,
    network_s: float,
) -> float | None:
    """The deadline of one queued verification under ``rule``; ``None`` when the session's
    class has no token-speed target.

    ``arrival_s``: when the block reached the server; ``start_s``: when the request started
    (the session opened); ``num_committed``: output tokens committed before this round.
    """
    if tokens_per_s is None:
        return None
    return DEADLINE_FUNCTIONS[rule](
        tokens_per_s, arrival_s, start_s, num_committed, expected_accepted, draft_s, network_s
    )
