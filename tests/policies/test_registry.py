"""Policies by name (edgespec.policies.registry): a parameter of the wrong type is named."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgespec.policies.registry import PolicyConfigError, build_policy
from edgespec.policies.window import DynamicWindow, StaticWindow


@pytest.mark.parametrize(
    ("kind", "name", "param", "value", "expected"),
    [
        ("window", "static", "gamma", "abc", "an integer, got 'abc' (str)"),
        ("window", "static", "gamma", 2.5, "an integer, got 2.5 (float)"),
        ("window", "static", "gamma", True, "an integer, got True (bool)"),
        ("window", "static", "fused", 1, "true/false, got 1 (int)"),
        ("window", "dynamic", "raise_above", "x", "a number, got 'x' (str)"),
        ("batching", "lab", "max_length_ratio", "2", "a number, got '2' (str)"),
    ],
)
def test_wrong_parameter_type_is_named(
    kind: str, name: str, param: str, value: Any, expected: str
) -> None:
    with pytest.raises(PolicyConfigError) as error:
        build_policy(kind, name, {param: value})
    assert str(error.value) == f"{kind} policy {name!r}: parameter {param!r} expects {expected}"


def test_right_types_still_build() -> None:
    assert build_policy("window", "static", {"gamma": np.int64(3)}) == StaticWindow(gamma=3)
    dynamic = build_policy("window", "dynamic", {"raise_above": 1, "lower_below": 0.1})
    assert dynamic == DynamicWindow(raise_above=1, lower_below=0.1)
    assert build_policy("batching", "lab", {"max_length_ratio": None}) is not None
