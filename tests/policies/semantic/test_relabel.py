"""WISV's CSI-aware relabelling (Eqs. 28–31) on hand-built episodes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgespec.policies.semantic.csi import ChannelState
from edgespec.policies.semantic.relabel import (
    BUDGETS,
    DECAY_TOKENS,
    DEFAULT_BUDGET,
    TEMPERATURE,
    Episode,
    hard_repairs,
    importance,
    rejection_targets,
    repair_budget,
    repair_probabilities,
    repair_threshold,
    sample_channel,
)

# Three critical mismatches at tokens 0, 4 and 12, a non-critical one at 40. With
# λ = 8 the middle one is the most important, then the first, then the third.
EPISODE = Episode(positions=(0, 4, 12, 40), critical=(1, 1, 1, 0))


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def test_importance_is_eq_28_over_token_positions() -> None:
    e = math.exp
    expected = [
        1 + e(-4 / 8) + e(-12 / 8),
        e(-4 / 8) + 1 + e(-8 / 8),
        e(-12 / 8) + e(-8 / 8) + 1,
        e(-40 / 8) + e(-36 / 8) + e(-28 / 8),
    ]
    assert DECAY_TOKENS == 8.0
    np.testing.assert_allclose(importance(EPISODE), expected, rtol=1e-12)


@pytest.mark.parametrize(
    ("quality", "expected"),
    [
        (0.0, (0, 0, 0, 0)),  # no budget: accept every mismatch
        (1 / 3, (0, 1, 0, 0)),  # one repair: the most important critical mismatch
        (2 / 3, (1, 1, 0, 0)),  # two: the least important critical one is accepted
        (1.0, (1, 1, 1, 0)),  # the base labels; a non-critical one is never rejected
    ],
)
def test_threshold_rule_in_the_zero_temperature_limit(
    quality: float, expected: tuple[int, ...]
) -> None:
    soft = repair_probabilities(EPISODE, quality, temperature=1e-3)
    np.testing.assert_allclose(soft, expected, atol=1e-9)
    assert tuple(hard_repairs(soft)) == expected


def test_soft_labels_meet_the_budget_exactly() -> None:
    s = importance(EPISODE)
    soft = repair_probabilities(EPISODE, 2 / 3)
    assert soft.sum() == pytest.approx(2.0, abs=1e-9)  # B(κ) = κ · n_c = 2
    mu = repair_threshold(s[:3], 2.0)
    expected = [_sigmoid((s[j] - mu) / TEMPERATURE) for j in range(3)] + [0.0]
    np.testing.assert_allclose(soft, expected, rtol=1e-12)
    assert soft[1] > soft[0] > soft[2] > 0.0 and soft[3] == 0.0
    assert tuple(hard_repairs(soft)) == (1, 1, 0, 0)


def test_a_budget_that_does_not_bind_leaves_mu_at_zero() -> None:
    s = importance(EPISODE)
    assert repair_threshold(s[:3], 3.0) == 0.0
    expected = [_sigmoid(s[j] / TEMPERATURE) for j in range(3)] + [0.0]
    np.testing.assert_allclose(repair_probabilities(EPISODE, 1.0), expected, rtol=1e-12)


def test_worse_channels_reject_less_and_never_a_non_critical_mismatch() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(1, 12))
        positions = tuple(int(p) for p in np.sort(rng.choice(200, n, replace=False)))
        episode = Episode(positions, tuple(int(y) for y in rng.integers(0, 2, n)))
        previous = np.zeros(n)
        for quality in np.linspace(0.0, 1.0, 11):
            soft = repair_probabilities(episode, float(quality))
            assert np.all(soft >= previous - 1e-9)
            assert np.all(soft[np.asarray(episode.critical) == 0] == 0.0)
            assert soft.sum() <= repair_budget(float(quality), episode.num_critical) + 1e-9
            previous = soft


def test_episodes_without_critical_mismatches_or_mismatches() -> None:
    np.testing.assert_array_equal(repair_probabilities(Episode((3, 9), (0, 0)), 1.0), [0, 0])
    assert repair_probabilities(Episode((), ()), 0.5).shape == (0,)
    assert importance(Episode((), ())).shape == (0,)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="increasing"):
        Episode((4, 2), (0, 1))
    with pytest.raises(ValueError, match="base labels"):
        Episode((1,), (0, 1))
    with pytest.raises(ValueError, match="0 or 1"):
        Episode((1,), (2,))
    with pytest.raises(ValueError, match="quality"):
        repair_budget(1.5, 2)
    with pytest.raises(ValueError, match="temperature"):
        repair_threshold([1.0], 1.0, temperature=0.0)
    with pytest.raises(ValueError, match="decay"):
        importance(EPISODE, decay=0.0)
    assert math.isinf(repair_threshold([1.0, 2.0], 0.0))


def test_csi_draws_stay_in_their_ranges() -> None:
    rng = np.random.default_rng(0)
    draws = [sample_channel(rng) for _ in range(500)]
    rates = np.array([c.uplink_bps for c in draws])
    assert rates.min() >= 5e6 and rates.max() <= 1000e6
    assert np.median(np.log10(rates)) == pytest.approx(np.log10(np.sqrt(5e6 * 1000e6)), abs=0.15)
    assert all(0.0 <= c.per <= 0.05 and 0.005 <= c.rtt_s <= 0.1 for c in draws)
    assert all(isinstance(c, ChannelState) for c in draws)


def test_named_budgets_keep_critical_is_the_base_labels() -> None:
    episode = Episode(positions=(3, 9, 30, 31), critical=(1, 0, 1, 1))
    assert set(BUDGETS) == {"keep-critical", "kappa-critical"} and DEFAULT_BUDGET == "keep-critical"
    for quality in (0.0, 0.43, 1.0):
        np.testing.assert_array_equal(
            rejection_targets(episode, quality, "keep-critical"), [1.0, 0.0, 1.0, 1.0]
        )
    np.testing.assert_array_equal(
        rejection_targets(episode, 0.43, "kappa-critical"), repair_probabilities(episode, 0.43)
    )
    assert rejection_targets(episode, 0.43, "kappa-critical").sum() == pytest.approx(0.43 * 3)
    with pytest.raises(ValueError, match="unknown budget 'half': known are keep-critical, kappa"):
        rejection_targets(episode, 0.5, "half")
