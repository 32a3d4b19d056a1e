"""WindowHistory: every WindowObservation field on a hand-built round sequence."""

from __future__ import annotations

import pytest

from edgespec.policies.inputs import RECENT_ROUNDS, RoundOutcome, WindowHistory
from edgespec.policies.interfaces import WindowObservation


def test_before_the_first_round() -> None:
    assert WindowHistory().observation(5.0) == WindowObservation(0, None)


def test_fields_after_each_round() -> None:
    history = WindowHistory()
    # round 1: policy said 6, 4 drafted (capped), 2 accepted, 3 committed
    history.record(RoundOutcome(6, 4, 2, 3, network_s=0.25, queue_depth=7), now_s=1.0)
    obs = history.observation(2.0)
    assert obs == WindowObservation(
        previous_gamma=6,
        recent_acceptance=0.5,
        last_num_accepted=2,
        queue_depth=7,
        rtt_s=0.25,
        tpot_s=(2.0 - 1.0) / (3 - 1),
    )
    history.record(RoundOutcome(3, 3, 3, 7, network_s=0.5, queue_depth=0), now_s=3.0)
    obs = history.observation(3.0)
    assert (obs.previous_gamma, obs.last_num_accepted, obs.queue_depth) == (3, 3, 0)
    assert obs.recent_acceptance == pytest.approx(5 / 7)
    assert obs.rtt_s == 0.5
    assert obs.tpot_s == pytest.approx((3.0 - 1.0) / 6)


def test_acceptance_covers_the_last_rounds_only() -> None:
    history = WindowHistory()
    history.record(RoundOutcome(4, 4, 0, 1, 0.0, 0), 0.0)  # falls out of the window
    for i in range(RECENT_ROUNDS):
        history.record(RoundOutcome(4, 4, 4, 5 * (i + 2), 0.0, 0), float(i + 1))
    assert history.observation(9.0).recent_acceptance == 1.0


def test_first_token_time_is_the_first_round_that_committed() -> None:
    history = WindowHistory()
    history.record(RoundOutcome(2, 2, 1, 2, 0.0, 0), now_s=4.0)
    assert history.observation(4.0).tpot_s == 0.0
    history.record(RoundOutcome(2, 2, 2, 5, 0.0, 0), now_s=10.0)
    assert history.observation(10.0).tpot_s == pytest.approx(6.0 / 4)
