from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.features import FEATURE_NAMES, draft_features, feature_matrix, softmax


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
