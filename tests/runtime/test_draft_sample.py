"""The compact draft distribution (runtime/sampling.py draft_sample): the support it keeps,
that the token is drawn from exactly the float32 row sent, that the verifier reads that row
as drawn (core/speculative.py as_drawn), and that stochastic verification with it keeps the
target's distribution at Gemma 3's vocabulary of 262,144 tokens, tail included."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.speculative import as_drawn, sample_token, stochastic_verify
from edgespec.core.wire_limits import DRAFT_SUPPORT_MAX_TOKENS
from edgespec.runtime.sampling import draft_sample, draft_support

scipy_stats = pytest.importorskip("scipy.stats")

GEMMA_VOCAB = 262_144


def test_the_support_holds_the_mass_most_likely_first() -> None:
    probs = np.array([0.1999, 0.5, 0.0001, 0.3])
    assert draft_support(probs).tolist() == [1, 3, 0]  # 0.5 + 0.3 + 0.1999 >= 0.999
    assert draft_support(np.array([0.0, 1.0, 0.0])).tolist() == [1]
    ties = np.full(4, 0.25)
    assert draft_support(ties).tolist() == [0, 1, 2, 3]  # ties by index


def test_a_flat_distribution_is_capped() -> None:
    support = draft_support(np.full(5000, 1 / 5000))
    assert support.tolist() == list(range(DRAFT_SUPPORT_MAX_TOKENS))


def test_the_token_is_drawn_from_the_row_sent() -> None:
    probs = np.random.default_rng(0).dirichlet(np.full(40, 0.3))
    for seed in range(50):
        token, q = draft_sample(probs, np.random.default_rng(seed), 64)
        assert q.dtype == np.float32 and q.shape == (64,)
        assert q[token] > 0
        assert token == sample_token(q, np.random.default_rng(seed))
        assert abs(float(q.sum(dtype=np.float64)) - 1.0) < 1e-6
        assert set(np.flatnonzero(q)) == set(draft_support(probs).tolist())


def test_a_trimmed_draft_maps_its_entries_to_target_ids() -> None:
    probs = np.array([0.7, 0.3])
    token, q = draft_sample(probs, np.random.default_rng(1), 10, np.array([8, 2]))
    assert token in (8, 2)
    np.testing.assert_allclose(q, [0, 0, 0.3, 0, 0, 0, 0, 0, 0.7, 0], rtol=1e-6)


def test_rows_read_as_drawn_are_sample_tokens_own_normalisation() -> None:
    rows = np.random.default_rng(3).random((3, 1000)).astype(np.float32)
    drawn = as_drawn(rows)
    for row, read in zip(rows, drawn, strict=True):
        np.testing.assert_array_equal(
            read, row.astype(np.float64) / np.cumsum(row, dtype=float)[-1]
        )


def test_draws_follow_the_compact_row() -> None:
    probs = np.random.default_rng(5).dirichlet(np.full(12, 0.5))
    _, q = draft_sample(probs, np.random.default_rng(0), 12)
    counts = np.zeros(12)
    for seed in range(4000):
        counts[draft_sample(probs, np.random.default_rng(seed), 12)[0]] += 1
    support = np.flatnonzero(q)
    assert counts[np.setdiff1d(np.arange(12), support)].sum() == 0
    expected = as_drawn(q[None, :])[0][support] * counts.sum()
    assert scipy_stats.chisquare(counts[support], expected).pvalue > 1e-3


def test_verification_keeps_the_target_distribution_at_262k_tokens() -> None:
    """The draft puts 20% of its mass on a flat tail of 262k tokens, so its support is cut
    to 1,024 entries and about a fifth of its mass is dropped before it draws; the first
    committed token must still follow the target (head tokens, tail tokens inside the
    draft's support, tail tokens outside it)."""
    setup = np.random.default_rng(11)
    head = 8

    def with_tail(head_mass: float) -> np.ndarray:
        row = np.full(GEMMA_VOCAB, (1 - head_mass) / (GEMMA_VOCAB - head))
        row[:head] = setup.dirichlet(np.ones(head)) * head_mass
        return row

    target, draft = with_tail(0.9), with_tail(0.8)
    _, q = draft_sample(draft, np.random.default_rng(0), GEMMA_VOCAB)
    inside = np.zeros(GEMMA_VOCAB, bool)
    inside[np.flatnonzero(q)] = True
    inside[:head] = False
    assert inside.sum() == DRAFT_SUPPORT_MAX_TOKENS - head
    p_rows = np.stack([target, target])
    counts = np.zeros(head + 2)
    rng = np.random.default_rng(2026)
    for _ in range(1200):
        token, q = draft_sample(draft, rng, GEMMA_VOCAB)
        first = stochastic_verify([token], q[None, :], p_rows, rng).committed_token_ids[0]
        counts[first if first < head else (head if inside[first] else head + 1)] += 1
    expected = np.append(target[:head], [target[inside].sum(), target[head:][~inside[head:]].sum()])
    assert scipy_stats.chisquare(counts, expected * counts.sum()).pvalue > 1e-3
