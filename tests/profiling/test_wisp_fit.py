"""The WISP cost fit (edgespec.profiling.fit) on synthetic batch shapes drawn around known
coefficients: exact recovery without noise, bootstrap intervals that cover them with
noise, exact metric values, and too few samples refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgespec.policies.estimator import BatchShape
from edgespec.profiling.fit import (
    WISP_TERMS,
    fit_linear,
    metrics,
    ols,
    split_indices,
    wisp_coefficients,
    wisp_design,
)

TRUE = (3e-5, 4e-8, 5e-6, 1.5e-2)  # a, b_compute, b_read, c (WISP Table 12's scale)


def _synthetic(n: int, noise_s: float, seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    shapes = []
    for _ in range(n):
        entries = [
            (int(rng.integers(1, 400)), int(rng.integers(0, 2000)))
            for _ in range(int(rng.integers(1, 17)))
        ]
        shapes.append(BatchShape.of(entries))
    x = wisp_design(shapes)
    y = x @ np.array(TRUE) + rng.normal(0, noise_s, n)
    return x, y


def test_ols_recovers_exact_coefficients_without_noise() -> None:
    x, y = _synthetic(40, 0.0, 0)
    np.testing.assert_allclose(ols(x, y), TRUE, rtol=1e-8)


def test_fit_with_noise_recovers_coefficients_and_intervals_cover_them() -> None:
    x, y = _synthetic(300, 2e-3, 1)
    train, test = split_indices(300, 0.3, np.random.default_rng(0))
    assert len(train) == 210 and len(test) == 90 and not set(train) & set(test)
    fit = fit_linear(WISP_TERMS, x, y, train, test, np.random.default_rng(0), 300)
    for true, value, (low, high) in zip(TRUE, fit.values, fit.intervals, strict=True):
        assert low <= true <= high
        assert low < value < high
    np.testing.assert_allclose(fit.values, TRUE, rtol=0.15)
    assert fit.test.r2 > 0.99 and fit.test.num_samples == 90
    assert abs(fit.test.mae_s - 2e-3 * np.sqrt(2 / np.pi)) < 4e-4  # E|N(0, σ)| = σ√(2/π)
    coeffs, clipped = wisp_coefficients(fit)
    assert clipped == () and coeffs.a_s == fit.values[0]


def test_metrics_exact_values() -> None:
    m = metrics(np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 3.0]))
    assert m.mae_s == pytest.approx(2 / 3)
    assert m.mape_pct == pytest.approx((0 + 50 + 25) / 3)
    assert m.r2 == pytest.approx(1 - 2 / (16 / 9 + 1 / 9 + 25 / 9))  # mean 7/3


def test_ols_refuses_too_few_samples() -> None:
    with pytest.raises(ValueError, match="3 samples cannot fit 4 coefficients"):
        ols(np.ones((3, 4)), np.ones(3))
