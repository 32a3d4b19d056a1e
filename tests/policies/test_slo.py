"""Deadlines (WISP Eqs. 4–6, 12 and the pace rule) and the acceptance estimate behind them."""

from __future__ import annotations

import math

from edgespec.policies.slo import (
    DEADLINE_FUNCTIONS,
    acceptance_estimate,
    pace_deadline_s,
    token_speed_budget_s,
    verification_deadline_s,
)


def test_acceptance_estimate_starts_at_the_prior_and_follows_the_evidence() -> None:
    assert acceptance_estimate(0, 0) == 0.7
    assert math.isclose(acceptance_estimate(4, 0), 2.8 / 8)  # half prior, half evidence
    assert math.isclose(acceptance_estimate(400, 100), (100 + 2.8) / 404)
    assert acceptance_estimate(4, 4, prior=0.5, prior_tokens=0.0) == 1.0


def test_token_speed_budget_is_eq_6() -> None:
    # α̂·N_d = 2.8 accepted tokens at 4 tok/s = 0.7 s, less 0.2 s drafting and 0.05 s network
    assert math.isclose(token_speed_budget_s(2.8, 4.0, 0.2, 0.05), 0.45)
    assert token_speed_budget_s(1.0, 2.0, 0.4, 0.2) < 0  # the client spent the budget


def test_deadlines_by_rule() -> None:
    kw = dict(arrival_s=10.0, start_s=2.0, num_committed=7, expected_accepted=2.8)
    speed = verification_deadline_s("token_speed", 4.0, draft_s=0.2, network_s=0.05, **kw)  # type: ignore[arg-type]
    assert speed is not None and math.isclose(speed, 10.45)
    pace = verification_deadline_s("pace", 4.0, draft_s=0.2, network_s=0.05, **kw)  # type: ignore[arg-type]
    assert pace == 2.0 + 8 / 4.0
    assert verification_deadline_s("token_speed", None, draft_s=0, network_s=0, **kw) is None  # type: ignore[arg-type]


def test_pace_deadline_is_the_pace_rule() -> None:
    assert pace_deadline_s(2.0, 7, 4.0) == 4.0  # start + (committed + 1) / s_c
    assert DEADLINE_FUNCTIONS["pace"](4.0, 10.0, 2.0, 7, 2.8, 0.2, 0.05) == 4.0
