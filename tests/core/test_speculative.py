from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

from edgespec.core.speculative import (
    acceptance_probability,
    greedy_verify,
    residual_distribution,
    sample_token,
    stochastic_verify,
)
from edgespec.core.speedup import (
    accepted_length_from_sequence,
    expected_accepted_length,
    expected_accepted_length_by_position,
    expected_committed_tokens,
    expected_speedup,
    marginal_acceptance_by_position,
    optimal_gamma,
)


class TestGreedy:
    def test_perfect_match_commits_all_plus_bonus(self) -> None:
        result = greedy_verify([5, 6, 7], [5, 6, 7, 9])
        assert result.num_accepted == 3
        assert result.first_rejection is None
        assert result.extra_token == 9
        assert result.committed_token_ids == (5, 6, 7, 9)
        assert result.num_wasted == 0

    def test_first_position_rejection(self) -> None:
        result = greedy_verify([5, 6, 7], [4, 6, 7, 9])
        assert result.num_accepted == 0
        assert result.first_rejection == 0
        assert result.committed_token_ids == (4,)
        assert result.num_wasted == 3

    def test_middle_rejection_ignores_later_matches(self) -> None:
        result = greedy_verify([5, 6, 7, 8], [5, 1, 7, 8, 2])
        assert (result.num_accepted, result.first_rejection, result.extra_token) == (1, 1, 1)
        assert result.committed_token_ids == (5, 1)

    def test_empty_block_commits_one_target_token(self) -> None:
        result = greedy_verify([], [3])
        assert result.committed_token_ids == (3,)
        assert result.first_rejection is None

    def test_wrong_target_length_is_an_error(self) -> None:
        with pytest.raises(ValueError, match="K\\+1=3"):
            greedy_verify([1, 2], [1, 2])


def _dist(rng: np.random.Generator, vocab: int) -> np.ndarray:
    return rng.dirichlet(np.ones(vocab))


class TestStochastic:
    def test_identical_distributions_accept_everything(self) -> None:
        rng = np.random.default_rng(0)
        p = np.tile(_dist(rng, 5), (4, 1))
        result = stochastic_verify([1, 2, 3], p[:3], p, np.random.default_rng(1))
        assert result.num_accepted == 3 and result.first_rejection is None

    def test_zero_target_probability_is_always_rejected(self) -> None:
        q = np.array([[0.5, 0.5, 0.0]])
        p = np.array([[0.0, 1.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
        for seed in range(20):
            result = stochastic_verify([0], q, p, np.random.default_rng(seed))
            assert result.num_accepted == 0
            assert result.extra_token == 1  # the residual max(0, p - q) is all on token 1

    def test_seeded_determinism(self) -> None:
        rng = np.random.default_rng(3)
        q = np.stack([_dist(rng, 8) for _ in range(4)])
        p = np.stack([_dist(rng, 8) for _ in range(5)])
        runs = [
            [stochastic_verify([1, 2, 3, 4], q, p, gen) for _ in range(50)]
            for gen in (np.random.default_rng(42), np.random.default_rng(42))
        ]
        assert runs[0] == runs[1]

    def test_shape_errors(self) -> None:
        q = np.full((2, 4), 0.25)
        with pytest.raises(ValueError, match="K=2"):
            stochastic_verify([0, 1], q, np.full((2, 4), 0.25), np.random.default_rng(0))

    def test_residual_distribution(self) -> None:
        p = np.array([0.5, 0.3, 0.2])
        q = np.array([0.2, 0.6, 0.2])
        np.testing.assert_allclose(residual_distribution(p, q), [1.0, 0.0, 0.0])
        np.testing.assert_allclose(residual_distribution(p, p), p)

    def test_preserves_target_distribution(self) -> None:
        """Generate 3 tokens by speculative sampling from a context-free draft/target pair
        whose distributions differ by absolute position; the joint law of the 3 tokens must
        be the product of the target's per-position distributions."""
        vocab, length, gamma, samples = 4, 3, 2, 60_000
        setup = np.random.default_rng(7)
        target = np.stack([setup.dirichlet(np.full(vocab, 0.7)) for _ in range(length + gamma + 1)])
        draft = np.stack([setup.dirichlet(np.full(vocab, 0.7)) for _ in range(length + gamma + 1)])
        rng = np.random.default_rng(2024)
        counts = np.zeros(vocab**length)
        for _ in range(samples):
            out: list[int] = []
            while len(out) < length:
                pos = len(out)
                drafts = [int(rng.choice(vocab, p=draft[pos + i])) for i in range(gamma)]
                result = stochastic_verify(
                    drafts, draft[pos : pos + gamma], target[pos : pos + gamma + 1], rng
                )
                out.extend(result.committed_token_ids)
            idx = 0
            for token in out[:length]:
                idx = idx * vocab + token
            counts[idx] += 1
        expected = np.array(
            [
                np.prod([target[i, t] for i, t in enumerate(seq)])
                for seq in itertools.product(range(vocab), repeat=length)
            ]
        )
        stat = chisquare(counts, expected * samples)
        assert stat.pvalue > 1e-3, stat


class TestExpectations:
    def test_expected_committed_tokens_closed_form(self) -> None:
        assert expected_committed_tokens(0.0, 4) == 1.0
        assert expected_committed_tokens(1.0, 4) == 5.0
        assert expected_committed_tokens(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)
        assert expected_accepted_length(0.5, 2) == pytest.approx(0.75)

    def test_expected_committed_matches_simulation(self) -> None:
        rng = np.random.default_rng(11)
        alpha, gamma = 0.7, 5
        flags = rng.random((200_000, gamma)) < alpha
        lengths = np.where(flags.all(axis=1), gamma, np.argmin(flags, axis=1))
        assert lengths.mean() + 1 == pytest.approx(
            expected_committed_tokens(alpha, gamma), rel=0.01
        )

    def test_speedup(self) -> None:
        assert expected_speedup(0.8, 4, 0.0) == pytest.approx(expected_committed_tokens(0.8, 4))
        assert expected_speedup(0.8, 4, 0.1) == pytest.approx((1 - 0.8**5) / (0.2 * 1.4))
        assert optimal_gamma(0.0, 0.1) == 1
        assert optimal_gamma(0.9, 0.01) > 4

    def test_invalid_alpha(self) -> None:
        with pytest.raises(ValueError, match="alpha"):
            expected_committed_tokens(1.5, 3)

    def test_acceptance_probability_is_one_minus_tv(self) -> None:
        p = np.array([0.5, 0.5, 0.0])
        q = np.array([0.25, 0.25, 0.5])
        assert acceptance_probability(p, q) == pytest.approx(0.5)


class TestPerPosition:
    def test_accepted_length_from_sequence_at_shorter_windows(self) -> None:
        seq = [1, 1, 0, 1, 1, 1]
        assert [accepted_length_from_sequence(seq, g) for g in range(7)] == [0, 1, 2, 2, 2, 2, 2]
        with pytest.raises(ValueError, match="exceeds"):
            accepted_length_from_sequence(seq, 7)

    def test_marginal_rates(self) -> None:
        rates = marginal_acceptance_by_position([0, 1, 2, 2], gamma=3)
        np.testing.assert_allclose(rates[:2], [3 / 4, 2 / 3])
        assert rates[2] == 0.0
        assert np.isnan(marginal_acceptance_by_position([0, 0], gamma=2)[1])

    def test_expected_length_by_position_matches_iid_formula(self) -> None:
        assert expected_accepted_length_by_position([0.6] * 4) == pytest.approx(
            expected_accepted_length(0.6, 4)
        )
        assert expected_accepted_length_by_position([0.5, 0.5]) == pytest.approx(0.75)


class TestSampleToken:
    def test_inverts_the_cdf_with_one_draw(self) -> None:
        probs = np.array([0.2, 0.0, 0.5, 0.3])
        rng, twin = np.random.default_rng(7), np.random.default_rng(7)
        for _ in range(50):
            u = twin.random()  # the one draw sample_token makes
            expected = int(np.searchsorted(np.cumsum(probs), u, side="right"))
            assert sample_token(probs, rng) == expected
        assert rng.random() == twin.random()  # nothing else was drawn

    def test_float32_and_unnormalized_rows_draw_like_their_float64_normalized_twin(self) -> None:
        rows = np.random.default_rng(1).random((20, 9)).astype(np.float32)
        for seed, row in enumerate(rows):
            as32 = sample_token(row, np.random.default_rng(seed))
            as64 = sample_token(row.astype(np.float64), np.random.default_rng(seed))
            assert as32 == as64
            scaled = sample_token(row.astype(np.float64) * 4.0, np.random.default_rng(seed))
            assert scaled == as64

    def test_never_returns_past_the_last_token(self) -> None:
        class One:
            def random(self) -> float:
                return 1.0

        assert sample_token(np.array([0.5, 0.5, 0.0]), One()) == 2  # type: ignore[arg-type]
