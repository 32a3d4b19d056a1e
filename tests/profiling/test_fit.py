"""Least-squares fits, their metrics, splits and bootstrap intervals (edgespec.profiling.fit), on
hand-built cases with hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgespec.profiling.fit import (
    WISP_TERMS,
    FitMetrics,
    LinearFit,
    fit_linear,
    metrics,
    ols,
    split_indices,
    wisp_coefficients,
)


def test_ols_solves_a_square_system_and_a_zero_column_gets_zero() -> None:
    # as many samples as coefficients: the exact solution, not a refusal
    np.testing.assert_allclose(
        ols(np.array([[1.0, 1.0], [2.0, 1.0]]), np.array([3.0, 5.0])), [2, 1]
    )
    # a column that is all zero (e.g. nothing cached in any row) must not poison the solve
    x = np.array([[1.0, 0.0, 1.0], [2.0, 0.0, 1.0], [3.0, 0.0, 1.0]])
    np.testing.assert_allclose(ols(x, 2.0 * x[:, 0] + 1.0), [2.0, 0.0, 1.0], atol=1e-12)


def test_ols_refuses_a_target_of_the_wrong_length() -> None:
    with pytest.raises(ValueError, match=r"design \(3, 2\) and target \(2,\) do not match"):
        ols(np.ones((3, 2)), np.ones(2))


def test_metrics_r2_uses_the_mean_of_the_measured_values() -> None:
    # measured mean 2, predicted mean 3: SS_tot = 1 + 0 + 1 = 2, SS_res = 1 + 1 + 1 = 3
    m = metrics(np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0]))
    assert m.r2 == pytest.approx(1 - 3 / 2)
    assert m.mae_s == pytest.approx(1.0)
    assert m.mape_pct == pytest.approx((100 + 50 + 100 / 3) / 3)
    assert m.num_samples == 3


def test_metrics_of_a_constant_target_have_no_r2_and_mape_is_a_magnitude() -> None:
    m = metrics(np.array([2.0, 2.0]), np.array([1.0, 3.0]))
    assert math.isnan(m.r2) and m.mae_s == 1.0 and m.mape_pct == 50.0
    # a negative target still gives a positive percentage error: |−1 − (−2)| / |−2| = 50%
    assert metrics(np.array([-2.0, 4.0]), np.array([-1.0, 4.0])).mape_pct == pytest.approx(25.0)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5])
def test_split_indices_refuses_a_fraction_outside_the_open_interval(fraction: float) -> None:
    with pytest.raises(ValueError, match=rf"test_fraction must be in \(0, 1\), got {fraction}"):
        split_indices(10, fraction, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("num_samples", "fraction", "num_test"),
    [(3, 0.9, 2), (10, 0.01, 1), (10, 0.3, 3), (2, 0.5, 1)],
)
def test_split_indices_keeps_both_sides_non_empty(
    num_samples: int, fraction: float, num_test: int
) -> None:
    train, test = split_indices(num_samples, fraction, np.random.default_rng(1))
    assert len(test) == num_test and len(train) == num_samples - num_test
    assert sorted([*train, *test]) == list(range(num_samples))  # a partition, no overlap
    assert list(train) == sorted(train) and list(test) == sorted(test)


def _line(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = rng.uniform(1.0, 10.0, n)
    x = np.column_stack([f, np.ones(n)])
    return x, 0.5 * f + 2.0 + rng.normal(0.0, 0.3, n)


def test_fit_linear_bootstrap_resamples_training_rows_and_held_out_rows() -> None:
    """Intervals are the 2.5th/97.5th percentiles of refits on training rows drawn with
    replacement, and the held-out (R², MAE, MAPE) intervals those of the test rows
    resampled against the one fit: replayed here from the same random stream."""
    x, y = _line(30, 0)
    train, test = np.arange(0, 20), np.arange(20, 30)
    fit = fit_linear(("c1", "c2"), x, y, train, test, np.random.default_rng(7), num_bootstrap=40)
    beta = np.array(fit.values)
    np.testing.assert_allclose(beta, np.linalg.lstsq(x[train], y[train], rcond=None)[0])
    rng = np.random.default_rng(7)
    refits, held_out = [], []
    for _ in range(40):
        rows = train[rng.integers(0, 20, 20)]
        refits.append(np.linalg.lstsq(x[rows], y[rows], rcond=None)[0])
        pick = test[rng.integers(0, 10, 10)]
        residual = y[pick] - x[pick] @ beta
        r2 = 1 - np.sum(residual**2) / np.sum((y[pick] - y[pick].mean()) ** 2)
        held_out.append((r2, np.mean(np.abs(residual)), 100 * np.mean(np.abs(residual / y[pick]))))
    np.testing.assert_allclose(fit.intervals, np.percentile(refits, [2.5, 97.5], axis=0).T)
    np.testing.assert_allclose(
        fit.test_intervals, np.percentile(held_out, [2.5, 97.5], axis=0).T, rtol=1e-9
    )
    assert fit.train.num_samples == 20 and fit.test.num_samples == 10
    assert fit.train == metrics(y[train], x[train] @ beta)
    assert fit.test == metrics(y[test], x[test] @ beta)
    low, high = fit.test_intervals[1]
    assert low < fit.test.mae_s < high


def test_fit_linear_held_out_intervals_skip_constant_resamples() -> None:
    # with 2 held-out rows, about half the resamples repeat one row (R² undefined): the
    # intervals are over the others, so they stay finite
    x, y = _line(12, 1)
    fit = fit_linear(
        ("c1", "c2"), x, y, np.arange(10), np.arange(10, 12), np.random.default_rng(0), 50
    )
    assert all(math.isfinite(v) for pair in fit.test_intervals for v in pair)


def test_fit_linear_refuses_names_that_do_not_match_the_columns() -> None:
    x, y = _line(10, 2)
    with pytest.raises(ValueError, match="3 names for 2 columns"):
        fit_linear(("a", "b", "c"), x, y, np.arange(8), np.arange(8, 10), np.random.default_rng(0))


def test_wisp_coefficients_clip_only_negative_values() -> None:
    m = FitMetrics(1.0, 0.0, 0.0, 1)
    fit = LinearFit(
        names=WISP_TERMS,
        values=(3e-5, 0.0, -2e-6, 1.5e-2),
        intervals=((0.0, 0.0),) * 4,
        train=m,
        test=m,
        test_intervals=((0.0, 0.0),) * 3,
    )
    coeffs, clipped = wisp_coefficients(fit)
    assert clipped == ("b_read_s",)  # 0.0 is a valid coefficient, not a clipped one
    assert (coeffs.a_s, coeffs.b_compute_s, coeffs.b_read_s, coeffs.c_s) == (3e-5, 0.0, 0.0, 1.5e-2)
