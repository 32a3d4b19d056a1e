from __future__ import annotations

import math

import numpy as np
import pytest

from edgespec.core.features import (
    FEATURE_NAMES,
    draft_features,
    feature_matrix,
    parse_feature_rows,
    parse_rejection_rows,
    softmax,
    stop_features,
)


def test_uniform_logits() -> None:
    (f,) = draft_features(np.zeros(8))
    assert f.confidence == pytest.approx(1 / 8)
    assert f.entropy_nats == pytest.approx(np.log(8))
    assert f.margin == pytest.approx(0.0)
    assert f.logit_std == pytest.approx(0.0)
    assert f.top5_mass == pytest.approx(5 / 8)
    assert f.position == 0


def test_peaked_logits_and_positions() -> None:
    logits = np.array([[10.0, 0.0, 0.0, 0.0], [0.0, 1.0, 2.0, 3.0]])
    first, second = draft_features(logits)
    assert first.confidence > 0.99 and first.entropy_nats < 0.01 and first.margin > 0.99
    probs = softmax(logits[1])
    assert second.confidence == pytest.approx(probs[3])
    assert second.margin == pytest.approx(probs[3] - probs[2])
    assert second.logit_std == pytest.approx(np.std([0.0, 1.0, 2.0, 3.0]))
    assert second.position == 1
    assert second.top5_mass == pytest.approx(1.0)


def test_matrix_shape_and_names() -> None:
    m = feature_matrix(np.random.default_rng(0).normal(size=(3, 50)))
    assert m.shape == (3, len(FEATURE_NAMES))
    assert draft_features(np.ones((3, 50)))[2].as_vector()[-1] == 2.0


def test_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match="V >= 2"):
        feature_matrix(np.zeros((2, 1)))
    with pytest.raises(ValueError, match="temperature"):
        softmax([1.0, 2.0], temperature=0)


def test_softmax_temperature_and_large_logits() -> None:
    np.testing.assert_allclose(softmax([0.0, 2.0], temperature=2.0), softmax([0.0, 1.0]))
    np.testing.assert_array_equal(softmax([1000.0, 0.0]), [1.0, 0.0])  # no overflow


def test_a_vanishing_probability_adds_no_entropy() -> None:
    (f,) = draft_features(np.array([[0.0, -1000.0]]))  # exp(-1000) underflows to 0
    assert f.entropy_nats == 0.0 and f.confidence == 1.0


def test_top_five_of_a_large_shuffled_vocabulary() -> None:
    logits = np.random.default_rng(0).permutation(100) / 10.0
    probs = np.sort(softmax(logits))
    (f,) = draft_features(logits)
    assert f.top5_mass == pytest.approx(probs[-5:].sum())
    assert f.margin == pytest.approx(probs[-1] - probs[-2])


def test_stop_features_are_rounded_to_four_digits() -> None:
    assert stop_features(np.array([[0.0, 1.0, 2.0, 3.0]])).tolist() == [
        [0.6439, 0.9475, 0.407, 1.118, 1.0]
    ]


@pytest.mark.parametrize(
    ("raw", "count", "message"),
    [
        ([[1, 2, 3, 4, 5]], 2, "expected 2 rows (one per output token) of 5 numbers"),
        ({"rows": []}, None, "expected a list of 5 numbers"),
        ([[1, 2, 3, 4]], None, "expected rows of 5 numbers, got [1, 2, 3, 4]"),
        ([[True, 0, 0, 0, 0]], None, "expected rows of 5 numbers, got [True, 0, 0, 0, 0]"),
        (
            [[1, 2, 3, 4, 5], [1, 2, math.nan, 4, 5]],
            2,
            "row 1: margin is nan, expected a finite number",
        ),
        ([[-math.inf, 0, 0, 0, 0]], 1, "row 0: confidence is -inf, expected a finite number"),
    ],
)
def test_bad_feature_rows_are_named(raw: object, count: int | None, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_feature_rows(raw, count)
    assert str(caught.value) == message


def test_feature_rows_parse_to_float_tuples() -> None:
    assert parse_feature_rows([[1, 2.5, 3, 4, 5]], 1) == ((1.0, 2.5, 3.0, 4.0, 5.0),)
    assert parse_rejection_rows([[2, [[0, 0, 0, 0, 1]]]]) == ((2, ((0.0, 0.0, 0.0, 0.0, 1.0),)),)
    with pytest.raises(ValueError) as caught:
        parse_rejection_rows([[True, []]])
    assert str(caught.value) == "expected [position, rows], got [True, []]"
    with pytest.raises(ValueError) as caught:
        parse_rejection_rows([[2, [[0, 0, 0, 0, 1]]], [5, [[0, 0, 0, 0, math.inf]]]])
    assert str(caught.value) == "position 5: row 0: top5_mass is inf, expected a finite number"
