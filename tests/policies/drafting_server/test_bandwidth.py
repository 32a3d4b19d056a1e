"""The uplink split (Zhu Eqs. 15–16, 25–27) by hand."""

from __future__ import annotations

import pytest

from edgespec.policies.drafting_server.bandwidth import (
    optimal_shares,
    optimal_upload_s,
    uniform_shares,
    upload_bits_per_token,
    upload_time_s,
)


def test_optimal_split_finishes_everyone_together() -> None:
    bits, eff = [100.0, 100.0], [1.0, 4.0]
    shares = optimal_shares(bits, eff)
    assert shares == pytest.approx((0.8, 0.2))  # ∝ bits / e: 100 and 25
    # 100 / (0.8·10·1) = 12.5 = 100 / (0.2·10·4), and Eq. 26: 100/10 + 100/40.
    assert upload_time_s(bits, eff, shares, 10.0) == pytest.approx(12.5)
    assert optimal_upload_s(bits, eff, 10.0) == pytest.approx(12.5)
    # Uniform: the poor user needs 100 / (0.5·10·1) = 20 s.
    assert upload_time_s(bits, eff, uniform_shares(2), 10.0) == pytest.approx(20.0)


def test_lambda_is_both_models_embeddings() -> None:
    assert upload_bits_per_token(2048, 4096) == 16 * 6144


def test_bad_splits_are_refused() -> None:
    with pytest.raises(ValueError, match="one spectral efficiency per user"):
        optimal_shares([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="summing to <= 1"):
        upload_time_s([1.0, 1.0], [1.0, 1.0], [0.7, 0.7], 1.0)
    with pytest.raises(ValueError, match="needs a bandwidth share > 0"):
        upload_time_s([1.0, 1.0], [1.0, 1.0], [1.0, 0.0], 1.0)
    with pytest.raises(ValueError, match="must be > 0"):
        optimal_upload_s([1.0], [0.0], 1.0)
