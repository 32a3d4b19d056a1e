"""Edge cases of the verification math: exact accept/reject boundaries, zero probabilities,
the float64 CDF, and every input check with its message (pinned by a mutation pass)."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.speculative import (
    greedy_verify,
    greedy_verify_tree,
    residual_distribution,
    sample_token,
    stochastic_verify,
)
from edgespec.core.speedup import (
    expected_accepted_length_by_position,
    expected_committed_tokens,
    expected_speedup,
    marginal_acceptance_by_position,
    optimal_gamma,
)
from edgespec.core.types import VerifyResult


class Fixed:
    """A stand-in generator whose every ``random()`` draw is ``value``."""

    def __init__(self, value: float) -> None:
        self.value = value

    def random(self) -> float:
        return self.value


class TestStochasticBoundaries:
    def test_zero_target_probability_is_rejected_even_on_a_zero_draw(self) -> None:
        q = np.array([[0.5, 0.5]])
        p = np.array([[0.0, 1.0], [0.5, 0.5]])
        result = stochastic_verify([0], q, p, Fixed(0.0))  # type: ignore[arg-type]
        assert result == VerifyResult(
            num_drafted=1, num_accepted=0, first_rejection=0, extra_token=1, accepted_token_ids=()
        )

    def test_a_token_the_draft_gave_zero_mass_is_accepted_when_the_target_allows_it(
        self,
    ) -> None:
        q = np.array([[0.0, 1.0]])
        p = np.array([[0.5, 0.5], [0.0, 1.0]])
        for seed in range(20):
            result = stochastic_verify([0], q, p, np.random.default_rng(seed))
            assert result.accepted_token_ids == (0,) and result.extra_token == 1

    def test_a_token_both_give_zero_mass_is_rejected(self) -> None:
        q = np.array([[0.0, 1.0]])
        p = np.array([[0.0, 1.0], [0.5, 0.5]])
        for seed in range(20):
            result = stochastic_verify([0], q, p, np.random.default_rng(seed))
            assert (result.num_accepted, result.extra_token) == (0, 1)

    def test_vocabulary_mismatch_is_an_error(self) -> None:
        with pytest.raises(ValueError, match="draft and target vocabularies differ in size"):
            stochastic_verify(
                [0], np.full((1, 3), 1 / 3), np.full((2, 4), 0.25), np.random.default_rng(0)
            )


class TestResidual:
    def test_a_small_but_real_residual_is_used(self) -> None:
        p = np.array([0.500001, 0.499999])
        q = np.array([0.5, 0.5])
        np.testing.assert_allclose(residual_distribution(p, q), [1.0, 0.0])

    def test_the_no_residual_fallback_is_normalized(self) -> None:
        p = np.array([0.2, 0.6])
        np.testing.assert_allclose(residual_distribution(p, p), [0.25, 0.75])


def test_sample_token_accumulates_float32_rows_in_float64() -> None:
    """Float32 accumulation loses the 4096 tail entries of 2**-25 next to 1.0 (each is below
    half an ulp of 1.0), so its CDF would stop at 1.0 and the draw would land on token 0."""
    tail = 4096
    row = np.concatenate([[1.0], np.full(tail, 2.0**-25)]).astype(np.float32)
    draw = 0.99995
    u = draw * (1.0 + tail * 2.0**-25)
    expected = int((u - 1.0) / 2.0**-25) + 1
    assert expected == 2419
    assert sample_token(row, Fixed(draw)) == expected  # type: ignore[arg-type]


class TestInputChecks:
    def test_greedy_refuses_too_many_target_tokens(self) -> None:
        with pytest.raises(ValueError, match="K\\+1=3 entries, got 4"):
            greedy_verify([1, 2], [1, 2, 3, 4])
        with pytest.raises(ValueError, match="K\\+1=3 entries, got 4"):
            greedy_verify_tree([1, 2], [-1, 0], [1, 2, 3, 4])

    def test_greedy_tree_checks_the_tree(self) -> None:
        with pytest.raises(ValueError, match="draft tree node 1 has parent 1"):
            greedy_verify_tree([1, 2], [-1, 1], [1, 2, 3])

    def test_negative_alpha_gamma_and_cost_are_errors(self) -> None:
        with pytest.raises(ValueError, match="alpha must be in \\[0, 1\\], got -0.1"):
            expected_committed_tokens(-0.1, 3)
        with pytest.raises(ValueError, match="gamma must be >= 0, got -1"):
            expected_committed_tokens(0.5, -1)
        with pytest.raises(ValueError, match="cost_ratio must be >= 0, got -0.1"):
            expected_speedup(0.5, 2, -0.1)

    @pytest.mark.parametrize("rate", [-0.1, 1.5])
    def test_rates_outside_the_unit_interval_are_errors(self, rate: float) -> None:
        with pytest.raises(ValueError, match=f"acceptance rate {rate} outside \\[0, 1\\]"):
            expected_accepted_length_by_position([0.5, rate])


def test_optimal_gamma_can_pick_max_gamma() -> None:
    assert optimal_gamma(1.0, 0.0, max_gamma=5) == 5  # S = γ + 1 grows without bound
    assert optimal_gamma(0.9, 0.01) == 16  # the optimum lies past the default cap


class TestMarginalRates:
    def test_lengths_may_equal_gamma(self) -> None:
        rates = marginal_acceptance_by_position([3, 3, 1], gamma=3)
        np.testing.assert_allclose(rates, [1.0, 2 / 3, 1.0])

    def test_negative_lengths_are_errors(self) -> None:
        with pytest.raises(ValueError, match="accepted lengths must lie in 0..2"):
            marginal_acceptance_by_position([-1, 1], gamma=2)

    def test_no_rounds_give_nan_everywhere(self) -> None:
        rates = marginal_acceptance_by_position([], gamma=3)
        assert rates.shape == (3,) and bool(np.isnan(rates).all())


def test_acceptance_probability_is_1_minus_total_variation_and_what_verification_accepts() -> None:
    from edgespec.core.speculative import acceptance_probability, sample_token, stochastic_verify

    p = np.array([0.5, 0.3, 0.2, 0.0])
    q = np.array([0.1, 0.3, 0.2, 0.4], dtype=np.float32)
    assert acceptance_probability(p, q) == pytest.approx(0.1 + 0.3 + 0.2)
    assert acceptance_probability(p, q) == pytest.approx(1 - 0.5 * np.abs(p - q).sum())
    assert acceptance_probability(p, p) == 1.0
    assert acceptance_probability(p, q[::-1]) == pytest.approx(0.4 + 0.2 + 0.2)
    rng = np.random.default_rng(11)
    trials = 20_000
    accepted = sum(
        stochastic_verify([t], q[None, :], np.stack([p, p]), rng).num_accepted
        for t in (sample_token(q, rng) for _ in range(trials))
    )
    # binomial(20000, 0.6): sd 69; 4 sd
    assert abs(accepted - 0.6 * trials) <= 4 * np.sqrt(trials * 0.6 * 0.4)
    with pytest.raises(ValueError, match="target row has 4 entries, draft row 3"):
        acceptance_probability(p, q[:3])
