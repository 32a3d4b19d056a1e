"""AWC's edges: the stabiliser's bounds and fused state, custom settings, and the exact
errors of AwcSettings, AwcWindow and a restored pair state."""

from __future__ import annotations

import re
from typing import Any

import pytest

from edgespec.policies.awc import (
    AwcSettings,
    AwcState,
    AwcWindow,
    hysteresis,
    round_gamma,
    stabilise,
)
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from tests.policies.awc_helpers import constant_model

SEEN = WindowObservation(4, 0.5, 2, queue_depth=3, rtt_s=0.01, tpot_s=0.03)


def test_round_gamma_stays_within_the_settings_range() -> None:
    narrow = AwcSettings(min_gamma=2, max_gamma=6)
    assert [round_gamma(x, narrow) for x in (0.2, 1.9, 4.5, 6.4, 9.0)] == [2, 2, 5, 6, 6]


def test_fused_mode_is_kept_while_near_one_whatever_the_count() -> None:
    # a restored state may be fused with a count below k: it stays fused while near 1
    assert hysteresis(True, 0, 1.2, AwcSettings()) == (True, 1)


def test_a_fused_decision_carries_gamma_one() -> None:
    # "near 1" widened to s < 2.5: s = 2.2 switches at once and is not rounded to 2
    settings = AwcSettings(fused_below=2.5, hysteresis_steps=1)
    assert stabilise(AwcState(), 2.2, settings) == (
        AwcState(2.2, 1, True),
        WindowDecision(1, True),
    )


def test_the_window_policy_uses_the_settings_it_is_given() -> None:
    policy = AwcWindow(constant_model(9.0), AwcSettings(max_gamma=6), initial_gamma=4)
    assert policy.next_window(SEEN) == WindowDecision(6)  # 9 clamped to 6


def test_a_fused_pair_state_round_trips() -> None:
    policy = AwcWindow(constant_model(3.0), fused_gamma=5)
    policy.restore_pair_state("p", (1.2, 2.0, 1.0))
    assert policy.state("p") == AwcState(1.2, 2, True)
    assert policy.pair_state("p") == (1.2, 2.0, 1.0)
    assert policy.next_window(WindowObservation(0, None, pair="p")) == WindowDecision(5, True)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"min_gamma": 0}, "need 1 <= min_gamma <= max_gamma"),
        ({"min_gamma": 5, "max_gamma": 4}, "need 1 <= min_gamma <= max_gamma"),
        ({"ema_alpha": 0.0}, "ema_alpha must be in (0, 1], got 0.0"),
        ({"ema_alpha": 1.5}, "ema_alpha must be in (0, 1], got 1.5"),
        ({"hysteresis_steps": 0}, "hysteresis_steps must be >= 1, got 0"),
    ],
)
def test_settings_are_checked(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        AwcSettings(**params)


def test_an_ema_alpha_of_one_follows_the_last_prediction() -> None:
    settings = AwcSettings(ema_alpha=1.0)
    state, _ = stabilise(AwcState(), 9.0, settings)
    assert stabilise(state, 3.0, settings)[1] == WindowDecision(3)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"queue_capacity": 0}, "queue_capacity must be >= 1, got 0"),
        ({"initial_gamma": 0}, "initial_gamma must be in [1, 12], got 0"),
        ({"initial_gamma": 13}, "initial_gamma must be in [1, 12], got 13"),
        (
            {"settings": AwcSettings(2, 6), "initial_gamma": 7},
            "initial_gamma must be in [2, 6], got 7",
        ),
        ({"fused_gamma": 0}, "fused_gamma must be >= 1, got 0"),
    ],
)
def test_window_policy_arguments_are_checked(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        AwcWindow(constant_model(3.0), **params)


def test_a_pair_state_below_min_gamma_is_refused() -> None:
    policy = AwcWindow(constant_model(3.0))
    with pytest.raises(ValueError, match=re.escape("smoothed must be in [1, 12], got 0.5")):
        policy.restore_pair_state("p", (0.5, 0.0, 0.0))
    assert policy.state("p") == AwcState()
