"""The threshold rule every predictor is cut by, and how far its choice can be trusted.

:func:`youden_threshold` picks, on validation data, the score cut maximising Youden's J
(TPR − FPR, i.e. balanced accuracy). J is flat near its best: many cuts are within the
validation set's sampling error of it, and their held-out FPRs differ. :func:`threshold_plateau`
measures that: the cuts whose validation J is within one standard error of the best (the
rule cannot tell them apart on this validation set) and the held-out FPR range over them.
A small change of scores (another CPU's kernels in training) may move the chosen cut
anywhere on the plateau, so a held-out FPR is known only to within that range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


def _at_or_above(
    sorted_scores: npt.NDArray[np.float64], cuts: npt.NDArray[np.float64]
) -> npt.NDArray[np.int64]:
    """How many of ``sorted_scores`` are ≥ each cut."""
    return len(sorted_scores) - np.searchsorted(sorted_scores, cuts, side="left")


def youden_curve(
    labels: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Every candidate cut, ascending (midpoints between distinct scores, and the top score),
    and its J = TPR − FPR of predicting "accepted" (label 1) when score ≥ cut."""
    distinct = np.unique(scores)
    cuts = np.concatenate([(distinct[:-1] + distinct[1:]) / 2.0, distinct[-1:]])
    accepted = labels == 1
    num_pos, num_neg = max(int(accepted.sum()), 1), max(int((~accepted).sum()), 1)
    tp = _at_or_above(np.sort(scores[accepted]), cuts)
    fp = _at_or_above(np.sort(scores[~accepted]), cuts)
    return cuts, tp / num_pos - fp / num_neg


def youden_threshold(labels: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]) -> float:
    """The operating threshold rule, applied on validation data to every predictor alike:
    the score cut maximising balanced accuracy (TPR − FPR, Youden's J). With 73% of rows
    accepted, the default 0.5 cut keeps most first rejections (high FPR); this rule lowers
    FPR at the first rejection at the cost of some recall. Ties go to the higher cut
    (lower FPR). Cuts are midpoints between distinct scores."""
    return _best_cut(*youden_curve(labels, scores))


def _best_cut(cuts: npt.NDArray[np.float64], j: npt.NDArray[np.float64]) -> float:
    """The cut of the largest J, the highest of those tied."""
    return float(cuts[np.flatnonzero(j == j.max())[-1]])


@dataclass(frozen=True, slots=True)
class ThresholdPlateau:
    """The validation cuts whose J is within ``j_standard_error`` of the best (``num_cuts``
    of them, from ``low_cut`` to ``high_cut``) and the held-out FPR at the first rejection
    over them, ``test_fpr_min`` to ``test_fpr_max``."""

    num_cuts: int
    low_cut: float
    high_cut: float
    j_standard_error: float
    test_fpr_min: float
    test_fpr_max: float


def threshold_plateau(
    val_labels: npt.NDArray[np.int64],
    val_scores: npt.NDArray[np.float64],
    test_labels: npt.NDArray[np.int64],
    test_scores: npt.NDArray[np.float64],
) -> ThresholdPlateau:
    """The cuts :func:`youden_threshold` cannot tell apart on validation and their held-out
    FPRs. The standard error is J's at the best cut, sqrt(TPR(1 − TPR)/P + FPR(1 − FPR)/N)
    over the validation set's P accepted and N rejected rows."""
    cuts, j = youden_curve(val_labels, val_scores)
    best = _best_cut(cuts, j)
    accepted = val_labels == 1
    num_pos, num_neg = max(int(accepted.sum()), 1), max(int((~accepted).sum()), 1)
    tpr = float((val_scores[accepted] >= best).sum() / num_pos)
    fpr = float((val_scores[~accepted] >= best).sum() / num_neg)
    error = math.sqrt(tpr * (1.0 - tpr) / num_pos + fpr * (1.0 - fpr) / num_neg)
    near = cuts[j >= j.max() - error]
    rejected = np.sort(test_scores[test_labels != 1])
    test_fpr = _at_or_above(rejected, near) / max(len(rejected), 1)
    return ThresholdPlateau(
        num_cuts=len(near),
        low_cut=float(near.min()),
        high_cut=float(near.max()),
        j_standard_error=error,
        test_fpr_min=float(test_fpr.min()),
        test_fpr_max=float(test_fpr.max()),
    )
