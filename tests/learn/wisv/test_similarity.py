"""The continuation-similarity base label: LCS and token-level ROUGE-L F1 on hand-built id
sequences, the windows and the critical rule."""

from __future__ import annotations

import pytest

from edgespec.learn.wisv.capture import base_labels
from edgespec.learn.wisv.similarity import (
    SIMILARITY_THRESHOLD,
    SIMILARITY_WINDOW,
    ContinuationSimilarity,
    lcs_length,
    rouge_l_f1,
)


@pytest.mark.parametrize(
    ("a", "b", "length"),
    [
        ([1, 2, 3, 2, 4, 1, 2], [2, 4, 3, 1, 2, 1], 4),  # ABCBDAB / BDCABA: BCBA
        ([1, 2, 3, 4], [2, 4], 2),
        ([1, 2, 3], [3, 2, 1], 1),
        ([1, 2, 3], [4, 5, 6], 0),
        ([7, 7, 7], [7, 7], 2),
        ([], [1, 2], 0),
        ([], [], 0),
        ([5, 6, 7, 8], [5, 6, 7, 8], 4),
    ],
)
def test_lcs_length(a: list[int], b: list[int], length: int) -> None:
    assert lcs_length(a, b) == length
    assert lcs_length(b, a) == length


@pytest.mark.parametrize(
    ("reference", "candidate", "f1"),
    [
        ([1, 2, 3, 4], [1, 2, 5, 4, 6, 7], 0.6),  # L 3: P 3/6, R 3/4, F1 6/10
        ([1, 2, 3, 4], [1, 2, 7, 8], 0.5),  # L 2 of 4 and 4
        ([1, 2, 3, 4], [1, 7, 8, 9], 0.25),
        ([1, 2, 3], [1, 2, 3], 1.0),
        ([1, 2, 3], [4, 5, 6], 0.0),
        ([1, 2, 3], [], 0.0),
        ([], [], 1.0),
        ([9, 1, 2, 3], [8, 1, 2, 3], 0.75),  # only the swapped first token differs
    ],
)
def test_rouge_l_f1(reference: list[int], candidate: list[int], f1: float) -> None:
    assert rouge_l_f1(reference, candidate) == pytest.approx(f1, abs=1e-12)
    assert rouge_l_f1(candidate, reference) == pytest.approx(f1, abs=1e-12)


def test_windows_and_labels() -> None:
    criterion = ContinuationSimilarity()
    assert (criterion.window, criterion.threshold) == (SIMILARITY_WINDOW, SIMILARITY_THRESHOLD)
    assert (SIMILARITY_WINDOW, SIMILARITY_THRESHOLD) == (32, 0.5)
    reference = list(range(100))
    j = 10
    # the draft's token, then the target's own text again: 31 of 32 tokens align
    rejoined = [*reference[:j], 999, *reference[j + 1 :]]
    a, b = criterion.windows(reference, rejoined, j)
    assert a == tuple(range(10, 42)) and len(b) == 32 and b[0] == 999
    assert criterion.similarity(reference, rejoined, j) == 62 / 64
    # nothing in common from the mismatch on
    disjoint = [*reference[:j], *range(1000, 1090)]
    assert criterion.similarity(reference, disjoint, j) == 0.0
    # the window ends with the output: 5 reference tokens against 3 swapped ones
    short = [*reference[:j], 999, 11, 13]
    assert criterion.windows(reference[:15], short, j) == ((10, 11, 12, 13, 14), (999, 11, 13))
    assert criterion.similarity(reference[:15], short, j) == 2 * 2 / 8
    # critical iff below the threshold: 0.5 itself is not critical
    assert criterion.critical(0.49) and not criterion.critical(0.5)
    assert not criterion.finished(reference)
    assert criterion.describe()["name"] == "rouge-l-f1"
    assert {k: criterion.describe()[k] for k in ("window", "threshold")} == {
        "window": 32,
        "threshold": 0.5,
    }


def test_base_labels_on_hand_built_continuations() -> None:
    criterion = ContinuationSimilarity(window=4)
    reference = (1, 2, 3, 4, 5, 6, 7, 8)
    outputs = [
        (1, 2, 9, 4, 5, 6, 7, 8),  # j 2: (3,4,5,6) vs (9,4,5,6): 0.75, not critical
        (1, 2, 3, 9, 9, 9, 9, 9),  # j 3: (4,5,6,7) vs (9,9,9,9): 0, critical
        (1, 2, 3, 4, 5, 9, 6, 8),  # j 5: (6,7,8) vs (9,6,8): 2/3, not critical
        (1, 2, 3, 4, 5, 6, 9, 10),  # j 6: (7,8) vs (9,10): 0, critical
        (1, 9),  # j 1: (2,3,4,5) vs (9,): 0 (the draft's token ended the output)
    ]
    labels = base_labels(criterion, reference, outputs, [2, 3, 5, 6, 1])
    assert labels.similarity == pytest.approx((0.75, 0.0, 2 / 3, 0.0, 0.0))
    assert labels.critical == (0, 1, 0, 1, 1)
    assert labels.answer is None and labels.continuation_answers == (None,) * 5


@pytest.mark.parametrize(
    ("window", "threshold", "message"),
    [(0, 0.5, "window"), (32, 0.0, "threshold"), (32, 1.5, "threshold")],
)
def test_bad_parameters(window: int, threshold: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ContinuationSimilarity(window, threshold)
