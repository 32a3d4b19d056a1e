"""The repetition penalty at the ends of its range keeps a row a distribution: a positive
logit divided by float32's least normal number stays at float32's largest (it was +inf,
and a row holding +inf samples as NaN), a 0 logit times float32's largest stays 0 (float32's
inf made it NaN); inside the range the result is float32 division's, bit for bit."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from edgespec.core.features import softmax
from edgespec.core.penalties import (
    MAX_REPETITION,
    MIN_REPETITION,
    penalize_rows,
    repetition_penalty_problem,
)
from edgespec.core.speculative import sample_token

ROW = (30.0, 0.0, -1.0, -2.0, 5.0)


def _penalized(repetition: float, row: tuple[float, ...] = ROW) -> npt.NDArray[np.float32]:
    rows = np.array([row], dtype=np.float32)
    penalize_rows(rows, [0, 1, 2, 3], 4, [()], repetition, 0.0, 0.0)  # all but the last seen
    penalized: npt.NDArray[np.float32] = rows[0]
    return penalized


def test_the_least_penalty_keeps_a_positive_logit_finite_and_the_row_samples() -> None:
    row = _penalized(MIN_REPETITION)
    assert row[0] == np.finfo(np.float32).max and row[1] == 0.0 and row[4] == 5.0
    probs = softmax(row)
    assert np.isfinite(probs).all() and probs[0] == 1.0
    assert sample_token(probs, np.random.default_rng(0)) == 0


def test_the_largest_penalty_keeps_a_zero_logit_zero() -> None:
    row = _penalized(MAX_REPETITION)
    assert not np.isnan(row).any()
    assert row[1] == 0.0 and row[4] == 5.0 and row[0] == np.float32(30.0 / MAX_REPETITION)
    assert row[3] == -np.inf  # −2 · float32's largest: −inf, a token left out
    probs = softmax(row)
    assert np.isfinite(probs).all() and probs[3] == 0.0
    assert probs[4] == pytest.approx(
        np.exp(5.0) / (np.exp(5.0) + 1.0 + np.exp(30.0 / MAX_REPETITION))
    )


def test_inside_the_range_the_penalty_is_float32_division_bit_for_bit() -> None:
    values = np.random.default_rng(3).normal(0.0, 8.0, 4096).astype(np.float32)
    for repetition in (1.3, 0.7, 1e-20, 3e30):
        rows = values[None, :].copy()
        penalize_rows(rows, np.arange(4096), 4096, [()], repetition, 0.0, 0.0)
        r = np.float32(repetition)
        with np.errstate(over="ignore"):
            expected = np.where(values > 0, values / r, values * r)
        expected = np.minimum(expected, np.finfo(np.float32).max)
        np.testing.assert_array_equal(rows[0], expected)


@pytest.mark.parametrize("value", [0.0, 1e-38, 5e-324, 1e39, float("inf"), float("nan"), -1.0])
def test_a_penalty_past_float32s_normal_range_is_refused(value: float) -> None:
    problem = repetition_penalty_problem(value)
    assert problem == (
        f"must be in [1.175e-38, 3.403e+38] (float32's normal range; 1: off), got {value:g}"
    )


@pytest.mark.parametrize("value", [MIN_REPETITION, 1.0, 1e-37, MAX_REPETITION])
def test_the_ends_of_the_range_are_taken(value: float) -> None:
    assert repetition_penalty_problem(value) is None


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_row_that_is_no_distribution_is_refused_not_drawn_from(bad: float) -> None:
    """A NaN or inf in a row made the CDF's search give the last id: a token drawn from no
    distribution, committed without an error."""
    with pytest.raises(ValueError, match="cannot draw a token from a row whose mass is"):
        sample_token(np.array([0.5, bad, 0.5]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="whose mass is 0.0"):
        sample_token(np.zeros(3), np.random.default_rng(0))
