"""Fitted-model files are checked when loaded: a NaN or inf weight, a standardising scale
that is not > 0, a bias of the wrong length or a malformed file is refused with the file,
the layer and the entry named (NaN passes every ``<`` check, and a NaN γ or P(accepted)
would steer every decision silently)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.policies.semantic.head import DecisionHead, load_head
from edgespec.policies.stop_drafting import DenseLayer, MlpStopPolicy, load_stop_policy
from edgespec.policies.wc_dnn import WcDnn, load_wc_dnn
from tests.policies.awc_helpers import constant_model
from tests.policies.semantic.test_head import hand_head
from tests.policies.stop_helpers import confidence_stop

DROP = object()
"""A value for :func:`_changed` that removes the key."""


def _changed(data: dict[str, Any], keys: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """``data`` with the entry at ``keys`` (dict keys and list indices) set to ``value``."""
    inner: Any = data
    for key in keys[:-1]:
        inner = inner[key]
    if value is DROP:
        del inner[keys[-1]]
    else:
        inner[keys[-1]] = value
    return data


def _written(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data))  # json writes NaN and Infinity as Python reads them
    return str(path)


@pytest.mark.parametrize(
    ("weight", "bias", "message"),
    [
        (np.array([[1.0, math.nan]]), np.zeros(2), "weight[0, 1] is nan, not a finite number"),
        (np.ones((1, 2)), np.array([0.0, -math.inf]), "bias[1] is -inf, not a finite number"),
        (
            np.ones((1, 2)),
            np.zeros(3),
            "bias must have 2 entries (the weight's outputs), got shape (3,)",
        ),
        (np.ones(2), np.zeros(2), "weight must be in × out, got shape (2,)"),
    ],
)
def test_a_dense_layer_is_finite_and_its_bias_fits(
    weight: np.ndarray[Any, Any], bias: np.ndarray[Any, Any], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        DenseLayer(weight, bias)
    assert str(info.value) == message


BIAS_2 = "bias must have {} entries (the weight's outputs), got shape (2,)"


@pytest.mark.parametrize(
    ("keys", "value", "message"),
    [
        (("output", "bias", 0), math.nan, "output.bias[0] is nan, not a finite number"),
        (("blocks", 1, 0, "weight", 2, 3), math.inf, "blocks[1][0].weight[2, 3] is inf, not"),
        (("input", "bias"), [0.0, 0.0], "input." + BIAS_2.format(4)),
        (("mean", 4), math.nan, "mean[4] is nan, not a finite number"),
        (("scale", 0), 0.0, "scale[0] must be finite and > 0, got 0.0"),
        (("scale", 2), math.inf, "scale[2] must be finite and > 0, got inf"),
        (("output",), DROP, "missing 'output'"),
        (("blocks",), [[1]], "blocks must be a list of layer pairs, got [[1]]"),
    ],
)
def test_a_bad_wc_dnn_file_is_refused_naming_the_entry(
    tmp_path: Path, keys: tuple[Any, ...], value: Any, message: str
) -> None:
    path = _written(tmp_path, _changed(constant_model(3.0).to_json(), keys, value))
    with pytest.raises(ValueError) as info:
        load_wc_dnn(path)
    assert str(info.value).startswith(f"{path}: malformed WC-DNN weights: {message}")


def test_a_wc_dnn_with_a_nan_mean_cannot_be_built() -> None:
    good = constant_model(3.0)
    with pytest.raises(ValueError, match=r"^mean\[0\] is nan, not a finite number$"):
        WcDnn(np.full(5, math.nan), good.scale, good.input, good.blocks, good.output)


@pytest.mark.parametrize(
    ("keys", "value", "message"),
    [
        (("layers", 0, "weight", 0, 0), math.nan, "layers[0].weight[0, 0] is nan, not a finite"),
        (("layers", 0, "bias"), [1.0, 2.0], "layers[0]." + BIAS_2.format(1)),
        (("scale",), [0.0] * 5, "scale[0] must be finite and > 0, got 0.0"),
        (("mean", 1), -math.inf, "mean[1] is -inf, not a finite number"),
        (("threshold",), math.nan, "threshold must be in [0, 1], got nan"),
        (("threshold",), "0.5", "threshold must be a number, got '0.5'"),
        (("layers", 0, "extra"), 1, "layers[0] must be an object with weight and bias"),
        (("layers",), DROP, "missing 'layers'"),
    ],
)
def test_a_bad_stop_predictor_file_is_refused_naming_the_entry(
    tmp_path: Path, keys: tuple[Any, ...], value: Any, message: str
) -> None:
    path = _written(tmp_path, _changed(confidence_stop().to_json(), keys, value))
    with pytest.raises(ValueError) as info:
        load_stop_policy(path)
    assert str(info.value).startswith(f"{path}: malformed MLP stop predictor: {message}")


def test_a_stop_policy_with_a_zero_scale_cannot_be_built() -> None:
    good = confidence_stop()
    with pytest.raises(ValueError, match=r"^scale\[3\] must be finite and > 0, got 0.0$"):
        MlpStopPolicy(good.mean, np.array([1.0, 1.0, 1.0, 0.0, 1.0]), good.layers, 0.5)


@pytest.mark.parametrize(
    ("keys", "value", "message"),
    [
        (("w1", 3, 1), math.nan, "w1[3, 1] is nan, not a finite number"),
        (("b2",), [math.inf], "b2[0] is inf, not a finite number"),
        (("mean", 0), math.nan, "mean[0] is nan, not a finite number"),
        (("scale", 2), math.nan, "scale[2] must be finite and > 0, got nan"),
        (("draft_hidden",), 2.5, "draft_hidden must be an integer >= 1, got 2.5"),
        (("target_hidden",), "1", "target_hidden must be an integer >= 1, got '1'"),
        (("w2",), DROP, "missing key 'w2'"),
        (("w1",), [["a"]], "w1 must be an array of numbers: could not convert"),
    ],
)
def test_a_bad_decision_head_file_is_refused_naming_the_entry(
    tmp_path: Path, keys: tuple[Any, ...], value: Any, message: str
) -> None:
    path = _written(tmp_path, _changed(hand_head().to_json(), keys, value))
    with pytest.raises(ValueError) as info:
        load_head(path)
    assert str(info.value).startswith(f"{path} is not a decision head: {message}")


def test_a_decision_head_with_a_nan_weight_cannot_be_built() -> None:
    good = hand_head()
    w1 = good.w1.copy()
    w1[0, 0] = math.nan
    with pytest.raises(ValueError, match=r"^w1\[0, 0\] is nan, not a finite number$"):
        DecisionHead(2, 1, good.mean, good.scale, w1, good.b1, good.w2, good.b2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"draft_hidden": 6', "not JSON: Expecting ',' delimiter: line 1 column 19 (char 18)"),
        ("[1, 2]", "expected a JSON object, got list"),
        (
            '{"draft_hidden": 6}',
            "missing keys 'target_hidden', 'mean', 'scale', 'w1', 'b1', 'w2', 'b2'",
        ),
    ],
)
def test_a_malformed_head_file_is_a_value_error_naming_it(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "head.json"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        load_head(path)
    assert type(info.value) is ValueError  # not a JSONDecodeError or a KeyError
    assert str(info.value) == f"{path} is not a decision head: {message}"
    with pytest.raises(ValueError) as info:
        load_head(tmp_path / "none.json")
    assert str(info.value) == f"cannot read {tmp_path / 'none.json'}: decision head file not found"
