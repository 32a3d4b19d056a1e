"""WcDnn.predict_one, AWC's per-round call, and predict: the same floats, bit for bit, as
the network's plain numpy expression (rows @ weight + bias, SiLU x·(0.5 + 0.5·tanh(0.5·x)),
the code both replaced), on the bundled weights and a small random model."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from edgespec.policies.awc import awc_feature_row, awc_features
from edgespec.policies.interfaces import WindowObservation
from edgespec.policies.wc_dnn import WcDnn, load_wc_dnn
from tests.policies.test_awc import _random_model

Array = npt.NDArray[np.float64]


def _plain(model: WcDnn, rows: Array) -> Array:
    """The network as numpy expressions, one temporary per operation."""

    def silu(x: Array) -> Array:
        return np.asarray(x * (0.5 + 0.5 * np.tanh(0.5 * x)), dtype=np.float64)

    x = (np.atleast_2d(rows) - model.mean) / model.scale
    x[np.isnan(x)] = 0.0
    h = silu(x @ model.input.weight + model.input.bias)
    for first, second in model.blocks:
        h = h + silu(h @ first.weight + first.bias) @ second.weight + second.bias
    return np.asarray((silu(h) @ model.output.weight + model.output.bias)[:, 0])


def _rows(n: int) -> Array:
    """Rows around AWC's feature ranges, some far out, NaN where a feature is missing."""
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(n, 5)) * [0.5, 0.3, 80.0, 30.0, 4.0] + [0.3, 0.7, 60.0, 30.0, 4.0]
    rows[::7, 1] = math.nan
    rows[::5, 3] = math.nan
    rows[::11] *= 100.0
    return rows


@pytest.mark.parametrize("model", [load_wc_dnn(), _random_model(11)], ids=["bundled", "small"])
def test_predict_one_is_the_plain_network_bit_for_bit(model: WcDnn) -> None:
    rows = _rows(3000)
    plain = [float(_plain(model, row)[0]) for row in rows]
    assert [model.predict_one(row.tolist()) for row in rows] == plain


@pytest.mark.parametrize("model", [load_wc_dnn(), _random_model(11)], ids=["bundled", "small"])
@pytest.mark.parametrize("n", [1, 2, 3, 64, 3000])
def test_predict_is_the_plain_network_bit_for_bit(model: WcDnn, n: int) -> None:
    rows = _rows(n)
    assert _plain(model, rows).tolist() == model.predict(rows).tolist()


def test_predict_one_needs_five_features() -> None:
    with pytest.raises(ValueError) as err:
        load_wc_dnn().predict_one([0.1, 0.2, 30.0, 20.0])
    assert str(err.value) == (
        "predict_one needs 5 features (queue_utilisation, recent_acceptance, rtt_ms, "
        "tpot_ms, previous_gamma), got 4"
    )


def test_feature_row_is_what_the_training_rows_hold() -> None:
    obs = WindowObservation(
        previous_gamma=6, recent_acceptance=None, queue_depth=3, rtt_s=0.0421, tpot_s=None
    )
    row = awc_feature_row(obs, 32)
    assert row[0] == 3 / 32 and row[2] == 0.0421 * 1e3 and row[4] == 6.0
    assert math.isnan(row[1]) and math.isnan(row[3])
    np.testing.assert_array_equal(awc_features(obs, 32), np.array(row))
    assert awc_features(obs, 32).dtype == np.float64
