"""WindowHistory: every WindowObservation field on a hand-built round sequence."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.policies.history_snapshot import RECENT_ROUNDS, HistorySnapshot
from edgespec.policies.inputs import RoundOutcome, WindowHistory
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


def test_a_round_that_drafted_nothing_keeps_the_last_acceptance() -> None:
    """A cloud-only fused round (or a last round with one token left) drafts nothing: it
    neither dilutes nor pushes out the acceptance of the rounds that drafted."""
    history = WindowHistory()
    history.record(RoundOutcome(4, 4, 1, 2, 0.0, 0), 0.0)  # stays inside the window
    for i in range(RECENT_ROUNDS - 1):
        history.record(RoundOutcome(4, 4, 4, 5 * (i + 2), 0.0, 0), float(i + 1))
    for k in range(10):
        history.record(RoundOutcome(4, 0, 0, 40 + k, 0.0, 0, fused=True), 9.0 + k)
    obs = history.observation(20.0)
    assert obs.recent_acceptance == (1 + 4 * (RECENT_ROUNDS - 1)) / (4 * RECENT_ROUNDS)
    assert (obs.previous_gamma, obs.last_num_accepted, obs.previous_fused) == (4, 0, True)
    assert WindowHistory().record_round(4, 0, 0, 1, 0.0, 0, 0.0, True).recent_acceptance is None


def test_first_token_time_is_the_first_round_that_committed() -> None:
    history = WindowHistory()
    history.record(RoundOutcome(2, 2, 1, 2, 0.0, 0), now_s=4.0)
    assert history.observation(4.0).tpot_s == 0.0
    history.record(RoundOutcome(2, 2, 2, 5, 0.0, 0), now_s=10.0)
    assert history.observation(10.0).tpot_s == pytest.approx(6.0 / 4)


# --- HistorySnapshot: the history as it moves between device and server

_ROUND = st.tuples(
    st.integers(1, 8),  # gamma
    st.integers(0, 8),  # drafted
    st.integers(0, 8),  # accepted (clipped to drafted)
    st.integers(0, 9),  # committed this round
    st.integers(0, 64).map(lambda k: k / 8),  # network_s (dyadic: exact arithmetic)
    st.integers(0, 5),  # queue_depth
    st.booleans(),  # fused
)


def _replayed(rounds: list[tuple[int, int, int, int, float, int, bool]]) -> WindowHistory:
    history = WindowHistory()
    committed = 0
    for i, (gamma, drafted, accepted, new, network_s, depth, fused) in enumerate(rounds):
        committed += new
        outcome = RoundOutcome(
            gamma, drafted, min(accepted, drafted), committed, network_s, depth, fused
        )
        history.record(outcome, now_s=100.0 + i)
    return history


@settings(max_examples=60, deadline=None)
@given(
    rounds=st.lists(_ROUND, max_size=9),
    elapsed=st.integers(0, 32).map(lambda k: k / 4),
    other_clock=st.integers(-512, 512).map(lambda k: 1000.0 + k / 2),
    later=st.integers(0, 16).map(lambda k: k / 4),
)
def test_a_snapshot_restores_the_same_observations(
    rounds: list[tuple[int, int, int, int, float, int, bool]],
    elapsed: float,
    other_clock: float,
    later: float,
) -> None:
    """Snapshot at t, restore on a host whose clock reads ``other_clock`` then: every
    observation ``later`` seconds on is identical, and so is the next round's."""
    history = _replayed(rounds)
    taken_s = 100.0 + len(rounds) + elapsed
    snapshot = history.snapshot(taken_s)
    restored = WindowHistory.from_snapshot(snapshot, other_clock)
    assert restored.snapshot(other_clock) == snapshot
    assert restored.observation(other_clock + later) == history.observation(taken_s + later)
    outcome = RoundOutcome(3, 3, 2, snapshot.num_committed_total + 3, 0.25, 1, fused=True)
    history.record(outcome, taken_s + later)
    restored.record(outcome, other_clock + later)
    assert restored.observation(other_clock + later) == history.observation(taken_s + later)


def test_snapshot_fields_and_the_first_token_age() -> None:
    history = WindowHistory()
    history.record(RoundOutcome(6, 4, 2, 3, network_s=0.25, queue_depth=7), now_s=1.0)
    history.record(RoundOutcome(5, 5, 5, 9, network_s=0.0, queue_depth=2, fused=True), 2.0)
    assert history.snapshot(3.5) == HistorySnapshot(
        recent=((4, 2), (5, 5)),
        num_rounds=2,
        gamma=5,
        last_num_accepted=5,
        num_committed_total=9,
        queue_depth=2,
        network_s=0.25,  # a fused round leaves the last distributed round's network time
        fused=True,
        first_token_age_s=2.5,
    )
    assert WindowHistory().snapshot(7.0) == HistorySnapshot()
    assert WindowHistory.from_snapshot(HistorySnapshot(), 7.0).observation(8.0) == (
        WindowObservation(0, None)
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"gamma": -1}, "gamma must be an integer in [0, 2147483647], got -1"),
        (  # uint32 on the wire: a run counting on from here would overflow its reply
            {"num_rounds": 2**32 - 1},
            "num_rounds must be an integer in [0, 2147483647], got 4294967295",
        ),
        (
            {"num_committed_total": 2**31},
            "num_committed_total must be an integer in [0, 2147483647], got 2147483648",
        ),
        (
            {"num_rounds": 1, "recent": ((1, 1), (2, 2))},
            "recent holds 2 rounds; at most 4 and at most num_rounds (1)",
        ),
        (
            {"num_rounds": 1, "recent": ((1, 2),)},
            "recent round (1, 2) needs 0 <= accepted <= drafted <= 2147483647",
        ),
        (
            {"num_rounds": 1, "recent": ((2**40, 1),)},
            "recent round (1099511627776, 1) needs 0 <= accepted <= drafted <= 2147483647",
        ),
        (  # AWC's network feature overflowed to inf: its NaN decision was clamped to γ = 1
            {"network_s": 1e308},
            "network_s must be at most 1e+06 s, got 1e+308",
        ),
        ({"first_token_age_s": 2e6}, "first_token_age_s must be at most 1e+06 s, got 2e+06"),
        ({"network_s": float("nan")}, "network_s must be finite and >= 0, got nan"),
        ({"first_token_age_s": -0.5}, "first_token_age_s must be finite and >= 0, got -0.5"),
    ],
)
def test_a_bad_snapshot_is_refused_naming_the_field(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        HistorySnapshot(**fields)  # type: ignore[arg-type]
    assert str(info.value) == f"history snapshot: {message}"
