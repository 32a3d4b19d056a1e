"""Least-squares fits of the cost models to measured batch latencies, with held-out
metrics and bootstrap intervals (WISP seed 000, App. C; Zhu et al. seed 001, §II-D).

WISP Eq. 19: T = a·N_linear + b_c·N_interactions + b_r·N_cached + c, fitted by ordinary
least squares on a training split; R², MAE and MAPE are reported on the held-out split;
95% intervals are the 2.5th/97.5th percentiles over bootstrap refits (training rows
resampled with replacement). Zhu Eq. 17: T(b, F) = c₁·F·b + c₂ with F·b the batch's total
FLOPs, fitted the same way with one regressor.

Coefficients are fitted unconstrained, or with ``nonnegative=True`` (the profiles
``edgespec profile`` writes: the simulator's
:class:`~edgespec.policies.estimator.WispCoefficients` rejects negatives) each term whose
least-squares value comes out negative is fixed at 0 and the others refitted without it
(:func:`nonnegative_ols`), so that the metrics reported are those of the coefficients
written; :attr:`LinearFit.clipped` names the terms fixed at 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.policies.estimator import BatchShape, WispCoefficients

FloatArray = npt.NDArray[np.float64]

WISP_TERMS = ("a_s", "b_compute_s", "b_read_s", "c_s")
ZHU_TERMS = ("c1_s_per_flop", "c2_s")


def wisp_design(shapes: Sequence[BatchShape]) -> FloatArray:
    """Rows [N_linear, N_interactions, N_cached, 1] (the intercept last, as c in Eq. 19)."""
    return np.array(
        [[s.num_linear, s.num_interactions, s.num_cached, 1.0] for s in shapes], dtype=np.float64
    )


def ols(x: FloatArray, y: FloatArray) -> FloatArray:
    """Least-squares coefficients of y ≈ x·β. Columns are scaled to unit norm before the
    solve (N_interactions is ~10⁶× N_linear), then unscaled."""
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"design {x.shape} and target {y.shape} do not match")
    if x.shape[0] < x.shape[1]:
        raise ValueError(f"{x.shape[0]} samples cannot fit {x.shape[1]} coefficients")
    norms = np.linalg.norm(x, axis=0)
    norms[norms == 0] = 1.0
    beta, *_ = np.linalg.lstsq(x / norms, y, rcond=None)
    return np.asarray(beta / norms, dtype=np.float64)


def nonnegative_ols(x: FloatArray, y: FloatArray) -> tuple[FloatArray, tuple[int, ...]]:
    """Least squares with every coefficient >= 0: the columns whose coefficient comes out
    negative are fixed at 0 and the rest refitted without them, until none is negative;
    also the fixed columns' indices, ascending."""
    fixed: set[int] = set()
    while True:
        free = [j for j in range(x.shape[1]) if j not in fixed]
        beta = np.zeros(x.shape[1], dtype=np.float64)
        if free:
            beta[free] = ols(x[:, free], y)
        negative = {j for j in free if beta[j] < 0}
        if not negative:
            return beta, tuple(sorted(fixed))
        fixed |= negative


@dataclass(frozen=True, slots=True)
class FitMetrics:
    """Goodness of fit on one split: R², mean absolute error (s), mean absolute
    percentage error (%), and the number of samples."""

    r2: float
    mae_s: float
    mape_pct: float
    num_samples: int


def metrics(y_true: FloatArray, y_pred: FloatArray) -> FitMetrics:
    residual = y_true - y_pred
    total = float(np.sum((y_true - y_true.mean()) ** 2))
    r2 = 1.0 - float(np.sum(residual**2)) / total if total > 0 else float("nan")
    mape = float(np.mean(np.abs(residual) / np.abs(y_true))) * 100.0
    return FitMetrics(r2, float(np.mean(np.abs(residual))), mape, int(y_true.shape[0]))


@dataclass(frozen=True, slots=True)
class LinearFit:
    """A fitted linear model: coefficient names and values, their bootstrap 95% intervals
    (low, high), and the metrics on the training and held-out splits (plus the held-out
    metrics' own bootstrap intervals, as (low, high) of R², MAE, MAPE)."""

    names: tuple[str, ...]
    values: tuple[float, ...]
    intervals: tuple[tuple[float, float], ...]
    train: FitMetrics
    test: FitMetrics
    test_intervals: tuple[tuple[float, float], ...]
    clipped: tuple[str, ...] = ()
    """The terms fixed at 0 because their unconstrained value was negative (a
    ``nonnegative`` fit's; the others were refitted without them)."""

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.names, self.values, strict=True))

    def as_json(self) -> dict[str, Any]:
        """The fit as a profile report gives it: coefficients, terms clipped to 0,
        intervals, and both splits' metrics."""
        return {
            "coefficients": self.as_dict(),
            "clipped_to_0": list(self.clipped),
            "intervals_95": dict(zip(self.names, self.intervals, strict=True)),
            "train": asdict(self.train),
            "test": asdict(self.test),
            "test_intervals_95": dict(
                zip(("r2", "mae_s", "mape_pct"), self.test_intervals, strict=True)
            ),
        }


def split_indices(
    num_samples: int, test_fraction: float, rng: np.random.Generator
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """A random (train, test) partition of ``range(num_samples)``, both non-empty."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    num_test = min(max(1, round(num_samples * test_fraction)), num_samples - 1)
    order = rng.permutation(num_samples)
    return np.sort(order[num_test:]), np.sort(order[:num_test])


def fit_linear(
    names: Sequence[str],
    x: FloatArray,
    y: FloatArray,
    train: npt.NDArray[np.intp],
    test: npt.NDArray[np.intp],
    rng: np.random.Generator,
    num_bootstrap: int = 1000,
    nonnegative: bool = False,
) -> LinearFit:
    """OLS on ``train`` (``nonnegative``: :func:`nonnegative_ols`, and the bootstrap
    refits keep its fixed terms at 0); metrics on both splits, of the coefficients
    returned; ``num_bootstrap`` refits on resampled training rows give the coefficients'
    95% intervals, and resampled test rows the held-out metrics' intervals."""
    if len(names) != x.shape[1]:
        raise ValueError(f"{len(names)} names for {x.shape[1]} columns")
    fixed: tuple[int, ...] = ()
    if nonnegative:
        beta, fixed = nonnegative_ols(x[train], y[train])
        x = x.copy()
        x[:, list(fixed)] = 0.0  # ols() leaves a zero column's coefficient at 0
    else:
        beta = ols(x[train], y[train])
    boot = np.empty((num_bootstrap, x.shape[1]))
    test_boot = np.empty((num_bootstrap, 3))
    pred_test = x[test] @ beta
    for i in range(num_bootstrap):
        rows = train[rng.integers(0, train.size, train.size)]
        boot[i] = ols(x[rows], y[rows])
        pick = rng.integers(0, test.size, test.size)
        m = metrics(y[test][pick], pred_test[pick])
        test_boot[i] = (m.r2, m.mae_s, m.mape_pct)
    boot[:, list(fixed)] = 0.0  # exactly: lstsq leaves ~1e-18 on a zeroed column
    low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    t_low, t_high = np.nanpercentile(test_boot, [2.5, 97.5], axis=0)
    return LinearFit(
        names=tuple(names),
        values=tuple(float(v) for v in beta),
        intervals=tuple((float(a), float(b)) for a, b in zip(low, high, strict=True)),
        train=metrics(y[train], x[train] @ beta),
        test=metrics(y[test], pred_test),
        test_intervals=tuple((float(a), float(b)) for a, b in zip(t_low, t_high, strict=True)),
        clipped=tuple(names[j] for j in fixed),
    )


def wisp_coefficients(fit: LinearFit) -> tuple[WispCoefficients, tuple[str, ...]]:
    """The fit as simulator coefficients, negative values clipped to 0; also the names of
    the clipped ones (a ``nonnegative`` fit's :attr:`LinearFit.clipped`, whose values are
    0 already, and any negative value)."""
    values = fit.as_dict()
    clipped = tuple(n for n in WISP_TERMS if values[n] < 0 or n in fit.clipped)
    return WispCoefficients(*(max(values[n], 0.0) for n in WISP_TERMS)), clipped
