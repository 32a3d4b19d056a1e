"""ROC AUC (Mann–Whitney), for the WISV head's metrics and its early stopping."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt


def roc_auc(
    scores: Sequence[float] | npt.NDArray[np.float64], labels: Sequence[int] | Any
) -> float:
    """Area under the ROC curve (Mann–Whitney, ties counted half); NaN with one class."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    positives, negatives = int(y.sum()), int((~y).sum())
    if positives == 0 or negatives == 0:
        return float("nan")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(s.size, dtype=np.float64)
    sorted_s = s[order]
    i = 0
    while i < s.size:  # average ranks over ties
        j = i
        while j + 1 < s.size and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = 0.5 * (i + j) + 1.0
        i = j + 1
    return float((ranks[y].sum() - positives * (positives + 1) / 2) / (positives * negatives))
