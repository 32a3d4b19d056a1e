"""A refused policy parameter is reported at its own config field (``….params.NAME``) with
its bound and its value, whichever policy refuses it: WISP's coefficients and guard,
DynamicWindow's thresholds (and the γ bound out of range), the stop predictor's threshold,
and the files AWC, the stop predictor and the WISV head read."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from edgespec.config import ConfigError, PolicySpec
from edgespec.policies.registry import build_policy_at

WISP = {"a_s": 1e-4, "b_compute_s": 1e-8, "b_read_s": 1e-7, "c_s": 0.015}


def _error_at(kind: str, name: str, params: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as error:
        build_policy_at(f"policies.{kind}", kind, PolicySpec(name, params))
    return str(error.value)


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("a_s", -1.0),
        ("b_compute_s", math.nan),
        ("b_read_s", -0.5),
        ("c_s", math.inf),
        ("guard_s", -1e-3),
        ("guard_s", math.nan),
        ("guard_s", math.inf),
    ],
)
def test_wisp_numbers_are_refused_at_their_field(param: str, value: float) -> None:
    assert _error_at("batching", "wisp", {**WISP, param: value}) == (
        f"config field 'policies.batching.params.{param}': batching policy 'wisp': "
        f"{param} must be a finite number >= 0, got {value}"
    )


@pytest.mark.parametrize(
    ("params", "param", "got"),
    [
        ({"raise_above": -0.5}, "raise_above", "0.25, -0.5"),
        ({"raise_above": -math.inf}, "raise_above", "0.25, -inf"),
        ({"raise_above": 2.0}, "raise_above", "0.25, 2.0"),
        ({"lower_below": -1.0}, "lower_below", "-1.0, 0.75"),
        ({"lower_below": math.nan}, "lower_below", "nan, 0.75"),
    ],
)
def test_dynamic_thresholds_name_the_one_out_of_range(
    params: dict[str, float], param: str, got: str
) -> None:
    assert _error_at("window", "dynamic", params) == (
        f"config field 'policies.window.params.{param}': window policy 'dynamic': "
        f"need 0 <= lower_below <= raise_above <= 1, got {got}"
    )


def test_a_min_gamma_over_the_bound_is_named_itself() -> None:
    assert _error_at("window", "dynamic", {"min_gamma": 10**9}) == (
        "config field 'policies.window.params.min_gamma': window policy 'dynamic': "
        "need 1 <= min_gamma <= initial_gamma <= max_gamma <= 256, got 1000000000, 4, 8"
    )


@pytest.mark.parametrize("threshold", [-0.5, 2.5, math.nan, math.inf, 1e308])
def test_the_stop_threshold_is_refused_at_its_field(threshold: float) -> None:
    assert _error_at("stop", "mlp", {"threshold": threshold}) == (
        "config field 'policies.stop.params.threshold': stop policy 'mlp': "
        f"threshold must be in [0, 1], got {threshold}"
    )


@pytest.mark.parametrize(
    ("kind", "name", "param", "what"),
    [
        ("window", "awc", "file", "WC-DNN weights file"),
        ("stop", "mlp", "file", "stop predictor file"),
    ],
)
def test_model_files_are_refused_at_their_field(
    kind: str, name: str, param: str, what: str, tmp_path: Path
) -> None:
    prefix = f"config field 'policies.{kind}.params.{param}': {kind} policy '{name}': "
    assert _error_at(kind, name, {param: str(tmp_path)}) == (
        f"{prefix}{tmp_path}: is a directory, not a {what}"
    )
    assert _error_at(kind, name, {param: "/dev/zero"}) == (
        f"{prefix}/dev/zero: is not a regular file (a device, pipe or socket)"
    )
    missing = tmp_path / "missing.json"
    assert _error_at(kind, name, {param: str(missing)}) == (
        f"{prefix}{what} {missing} does not exist"
    )


def test_the_head_path_is_checked_at_its_field(tmp_path: Path) -> None:
    prefix = "config field 'policies.head.params.path': head policy 'wisv': "
    assert _error_at("head", "wisv", {"path": 3}) == (
        f"{prefix}parameter 'path' expects a string, got 3 (int)"
    )
    assert _error_at("head", "wisv", {"path": str(tmp_path)}) == (
        f"{prefix}cannot read {tmp_path}: is a directory, not a decision head file"
    )
    assert _error_at("head", "wisv", {"path": "/dev/zero"}) == (
        f"{prefix}cannot read /dev/zero: is not a regular file (a device, pipe or socket)"
    )
