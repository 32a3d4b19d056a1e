"""The threshold rule (Youden's J on validation) and its plateau, on hand-built cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgespec.learn.stop.threshold import threshold_plateau, youden_curve, youden_threshold


def test_youden_threshold_prefers_lower_fpr_on_ties() -> None:
    labels = np.array([1, 1, 1, 0, 0])
    scores = np.array([0.9, 0.8, 0.6, 0.7, 0.3])
    # cut 0.5 (between 0.3 and 0.6): TPR 1, FPR 0.5 → J 0.5;
    # cut 0.75: TPR 2/3, FPR 0 → J 0.667 (the best)
    assert youden_threshold(labels, scores) == 0.75


def test_youden_threshold_considers_the_top_score_and_breaks_ties_upwards() -> None:
    labels = np.array([0, 0, 1])
    # cuts 0.15 (J 0.5), 0.55 (J 1) and the top score 0.9 itself (J 1: score >= cut): the
    # tie goes to the higher cut
    assert youden_threshold(labels, np.array([0.1, 0.2, 0.9])) == 0.9
    # one distinct score: that score
    assert youden_threshold(labels, np.array([0.3, 0.3, 0.3])) == 0.3


def test_youden_curve_is_every_midpoint_and_the_top_score_with_its_j() -> None:
    labels = np.array([1, 1, 1, 0, 0])
    cuts, j = youden_curve(labels, np.array([0.9, 0.8, 0.6, 0.7, 0.3]))
    assert cuts.tolist() == pytest.approx([0.45, 0.65, 0.75, 0.85, 0.9])
    assert j.tolist() == pytest.approx([1 - 0.5, 2 / 3 - 0.5, 2 / 3, 1 / 3, 1 / 3])


def test_plateau_is_the_cuts_within_one_standard_error_and_their_held_out_fprs() -> None:
    """Validation: accepted rows at 0.9/0.8/0.7/0.6, rejected at 0.65/0.5/0.4/0.2/0.1/0.05.
    The best J is at cut 0.55 (TPR 1, FPR 1/6: J 0.833), where J's SE is
    sqrt(1/6 · 5/6 / 6) = 0.152; cut 0.675 (TPR 3/4, FPR 0: J 0.75) is within it, 0.45
    (TPR 1, FPR 2/6: J 0.667) and the others are not. Held-out rejected rows at 0.6, 0.58
    and 0.1: cut 0.55 keeps two (FPR 2/3), 0.675 none (FPR 0)."""
    val_labels = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    val_scores = np.array([0.9, 0.8, 0.7, 0.6, 0.65, 0.5, 0.4, 0.2, 0.1, 0.05])
    test_labels = np.array([0, 0, 0, 1])
    test_scores = np.array([0.6, 0.58, 0.1, 0.95])
    assert youden_threshold(val_labels, val_scores) == pytest.approx(0.55)
    p = threshold_plateau(val_labels, val_scores, test_labels, test_scores)
    assert p.j_standard_error == pytest.approx(math.sqrt(1 / 6 * 5 / 6 / 6))
    assert p.num_cuts == 2 and (p.low_cut, p.high_cut) == pytest.approx((0.55, 0.675))
    assert (p.test_fpr_min, p.test_fpr_max) == pytest.approx((0.0, 2 / 3))


def test_a_perfect_validation_split_has_a_plateau_of_its_exact_cuts() -> None:
    """J = 1 with no sampling error: only the cuts between the classes are on the plateau."""
    labels = np.array([0, 0, 1, 1])
    p = threshold_plateau(
        labels, np.array([0.1, 0.2, 0.8, 0.9]), labels, np.array([0.5, 0.3, 1.0, 1.0])
    )
    assert p.j_standard_error == 0.0
    assert (p.num_cuts, p.low_cut, p.high_cut) == (1, 0.5, 0.5)
    assert (p.test_fpr_min, p.test_fpr_max) == (0.5, 0.5)  # 0.5 ≥ 0.5 is kept


def _threshold_by_loop(labels: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]) -> float:
    """The rule written out: every cut tried in turn, ties to the higher cut."""
    distinct = sorted(set(scores.tolist()))
    cuts = [(a + b) / 2.0 for a, b in itertools.pairwise(distinct)] + [distinct[-1]]
    pos, neg = max(int((labels == 1).sum()), 1), max(int((labels != 1).sum()), 1)
    best_cut, best_j = cuts[0], -math.inf
    for cut in cuts:
        kept = scores >= cut
        j = (kept & (labels == 1)).sum() / pos - (kept & (labels != 1)).sum() / neg
        if j >= best_j:
            best_cut, best_j = cut, float(j)
    return float(best_cut)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 1), st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5001, 0.7, 0.9, 1.0])),
        min_size=1,
        max_size=40,
    )
)
def test_the_curve_picks_the_cut_a_loop_over_every_cut_picks(rows: list[tuple[int, float]]) -> None:
    labels = np.array([r[0] for r in rows])
    scores = np.array([r[1] for r in rows])
    assert youden_threshold(labels, scores) == _threshold_by_loop(labels, scores)
