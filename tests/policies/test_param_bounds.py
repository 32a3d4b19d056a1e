"""Policy parameters out of range or of the wrong type: refused when the policy is built,
at the parameter's own config field (``policies.window.params.gamma``), with γ bounded by
the one constant MAX_GAMMA; and the rule for a request that can never fit a server's
batch limits."""

from __future__ import annotations

import math
import pickle
from typing import Any

import pytest

from edgespec.config import ConfigError, PolicySpec
from edgespec.policies.batching import LengthAwareBatching
from edgespec.policies.params import MAX_GAMMA, PolicyParamError
from edgespec.policies.registry import ParamValueError, build_policy, build_policy_at
from edgespec.policies.window import StaticWindow


def _error_at(kind: str, name: str, params: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as error:
        build_policy_at(f"policies.{kind}", kind, PolicySpec(name, params))
    return str(error.value)


def test_the_gamma_bound_is_the_one_constant() -> None:
    assert MAX_GAMMA == 256
    assert StaticWindow(gamma=MAX_GAMMA).decision.gamma == MAX_GAMMA
    with pytest.raises(PolicyParamError, match=r"^gamma must be <= 256, got 257$") as error:
        StaticWindow(gamma=MAX_GAMMA + 1)
    assert error.value.param == "gamma"


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        (
            "static",
            {"gamma": 100_000_000},
            "'policies.window.params.gamma': window policy 'static': "
            "gamma must be <= 256, got 100000000",
        ),
        (
            "static",
            {"gamma": 0},
            "'policies.window.params.gamma': window policy 'static': gamma must be >= 1, got 0",
        ),
        (
            "static",
            {"gamma": 1e23},
            "'policies.window.params.gamma': window policy 'static': parameter 'gamma' expects "
            "an integer, got 1e+23 (float)",
        ),
        (
            "dynamic",
            {"max_gamma": 300},
            "'policies.window.params.max_gamma': window policy 'dynamic': "
            "need 1 <= min_gamma <= initial_gamma <= max_gamma <= 256, got 1, 4, 300",
        ),
        (
            "dynamic",
            {"min_gamma": 0},
            "'policies.window.params.min_gamma': window policy 'dynamic': "
            "need 1 <= min_gamma <= initial_gamma <= max_gamma <= 256, got 0, 4, 8",
        ),
        (
            "dynamic",
            {"initial_gamma": 9},
            "'policies.window.params.initial_gamma': window policy 'dynamic': "
            "need 1 <= min_gamma <= initial_gamma <= max_gamma <= 256, got 1, 9, 8",
        ),
        (
            "dynamic",
            {"raise_above": math.nan},
            "'policies.window.params.raise_above': window policy 'dynamic': "
            "need 0 <= lower_below <= raise_above <= 1, got 0.25, nan",
        ),
        (
            "dynamic",
            {"lower_below": 0.9},
            "'policies.window.params.lower_below': window policy 'dynamic': "
            "need 0 <= lower_below <= raise_above <= 1, got 0.9, 0.75",
        ),
    ],
)
def test_window_parameters_are_refused_at_their_field(
    name: str, params: dict[str, Any], message: str
) -> None:
    assert _error_at("window", name, params) == f"config field {message}"


@pytest.mark.parametrize(
    ("param", "value", "message"),
    [
        ("initial_gamma", 4.5, "parameter 'initial_gamma' expects an integer, got 4.5 (float)"),
        ("initial_gamma", True, "parameter 'initial_gamma' expects an integer, got true"),
        ("fused_gamma", 2.5, "parameter 'fused_gamma' expects an integer, got 2.5 (float)"),
        ("queue_capacity", 2.5, "parameter 'queue_capacity' expects an integer, got 2.5 (float)"),
        ("file", 3, "parameter 'file' expects a string, got 3 (int)"),
        ("queue_capacity", 0, "queue_capacity must be >= 1, got 0"),
        ("initial_gamma", 13, "initial_gamma must be in [1, 12], got 13"),
        ("fused_gamma", 0, "fused_gamma must be in [1, 256], got 0"),
        ("fused_gamma", 257, "fused_gamma must be in [1, 256], got 257"),
    ],
)
def test_awc_parameters_are_checked_when_built(param: str, value: Any, message: str) -> None:
    """A factory function's signature is checked as a dataclass's fields are (AWC used to
    run with γ = 4.5 until the contract check stopped the simulation)."""
    assert _error_at("window", "awc", {param: value}) == (
        f"config field 'policies.window.params.{param}': window policy 'awc': {message}"
    )


def test_awc_builds_with_integer_parameters() -> None:
    policy = build_policy("window", "awc", {"initial_gamma": 5, "fused_gamma": MAX_GAMMA})
    assert (policy.initial_gamma, policy.fused_gamma, policy.queue_capacity) == (5, 256, 32)


@pytest.mark.parametrize("ratio", [0.5, 0.0, -2.0, math.nan, math.inf, -math.inf])
def test_lab_length_ratio_must_be_finite_and_at_least_one(ratio: float) -> None:
    assert _error_at("batching", "lab", {"max_length_ratio": ratio}) == (
        "config field 'policies.batching.params.max_length_ratio': batching policy 'lab': "
        f"max_length_ratio must be a finite number >= 1 (or null: no bound), got {ratio}"
    )


@pytest.mark.parametrize("ratio", [None, 1, 1.0, 3.5])
def test_lab_accepts_no_bound_or_a_ratio_of_at_least_one(ratio: float | None) -> None:
    assert LengthAwareBatching(ratio).max_length_ratio == ratio


def test_param_errors_pickle_whole() -> None:
    """Sweeps raise errors in worker processes: the parameter's name survives."""
    for error in (PolicyParamError("gamma", "m"), ParamValueError("gamma", "m")):
        copy = pickle.loads(pickle.dumps(error))
        assert (type(copy), copy.param, str(copy)) == (type(error), "gamma", "m")
