"""Policies by name (edgespec.policies.registry): a parameter of the wrong type is named, a
misspelt name gets the closest known one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from edgespec.policies.fusing import fusing
from edgespec.policies.registry import (
    BATCHING,
    KINDS,
    ROUTING,
    WINDOW,
    WINDOW_FUSES,
    PolicyConfigError,
    build_policy,
)
from edgespec.policies.window import DynamicWindow, StaticWindow

if TYPE_CHECKING:  # only: the annotations below name a type the module does not import
    from fractions import Fraction


@pytest.mark.parametrize(
    ("kind", "name", "param", "value", "expected"),
    [
        ("window", "static", "gamma", "abc", "an integer, got 'abc' (str)"),
        ("window", "static", "gamma", 2.5, "an integer, got 2.5 (float)"),
        ("window", "static", "gamma", True, "an integer, got true"),
        ("window", "static", "fused", 1, "true/false, got 1 (int)"),
        ("window", "static", "fused", None, "true/false, got null"),
        ("window", "dynamic", "raise_above", False, "a number, got false"),
        ("window", "dynamic", "raise_above", "x", "a number, got 'x' (str)"),
        ("window", "dynamic", "raise_above", True, "a number, got true"),
        ("window", "static", "gamma", None, "an integer, got null"),
        ("batching", "lab", "max_length_ratio", "2", "a number, got '2' (str)"),
    ],
)
def test_wrong_parameter_type_is_named(
    kind: str, name: str, param: str, value: Any, expected: str
) -> None:
    with pytest.raises(PolicyConfigError) as error:
        build_policy(kind, name, {param: value})
    assert str(error.value) == f"{kind} policy {name!r}: parameter {param!r} expects {expected}"


@pytest.mark.parametrize("name", sorted(WINDOW))
def test_each_window_policy_says_whether_it_may_fuse_alike_in_the_registry_and_its_class(
    name: str,
) -> None:
    """Before the policy exists, ``WINDOW_FUSES`` says whether the run's servers get their
    co-located drafts; the built policy (``may_fuse``, :func:`fusing`) picks the handler
    set, whose distributed-only sets stop the run at a fused answer it did not declare.
    Both are needed, and must agree (with the default params)."""
    assert name in WINDOW_FUSES, f"no WINDOW_FUSES[{name!r}] in edgespec/policies/registry.py"
    declared = fusing(build_policy("window", name), "distributed")
    assert declared is not None, f"window policy {name!r} has no class attribute `may_fuse`"
    assert WINDOW_FUSES[name]({}) is declared


def test_right_types_still_build() -> None:
    assert build_policy("window", "static", {"gamma": np.int64(3)}) == StaticWindow(gamma=3)
    dynamic = build_policy("window", "dynamic", {"raise_above": 1, "lower_below": 0.1})
    assert dynamic == DynamicWindow(raise_above=1, lower_below=0.1)
    assert build_policy("batching", "lab", {"max_length_ratio": None}) is not None


def test_unknown_kinds_and_private_fields_are_refused() -> None:
    with pytest.raises(PolicyConfigError) as error:
        build_policy("admission", "fcfs")
    assert str(error.value) == f"unknown policy kind 'admission'; known: {sorted(KINDS)}"
    with pytest.raises(PolicyConfigError) as error:
        build_policy("routing", "round_robin", {"_cursor": 3})
    assert str(error.value) == (
        "routing policy 'round_robin' has no parameter(s) ['_cursor']; known: []"
    )


@pytest.mark.parametrize(
    ("kind", "name", "params", "message"),
    [
        (
            "batching",
            "fcsf",
            {},
            f"unknown batching policy 'fcsf'; known: {sorted(BATCHING)} (did you mean 'fcfs'?)",
        ),
        (
            "window",
            "dynamc",
            {},
            f"unknown window policy 'dynamc'; known: {sorted(WINDOW)} (did you mean 'dynamic'?)",
        ),
        (
            "batchng",
            "fcfs",
            {},
            f"unknown policy kind 'batchng'; known: {sorted(KINDS)} (did you mean 'batching'?)",
        ),
        (
            "window",
            "static",
            {"gama": 3},
            "window policy 'static' has no parameter(s) ['gama']; known: ['fused', 'gamma'] "
            "(did you mean 'gamma'?)",
        ),
        ("batching", "edf", {}, f"unknown batching policy 'edf'; known: {sorted(BATCHING)}"),
    ],
)
def test_a_misspelt_name_ends_with_the_closest_known_name(
    kind: str, name: str, params: dict[str, Any], message: str
) -> None:
    """The message as before, then the suggestion; none when no name is close."""
    with pytest.raises(PolicyConfigError) as error:
        build_policy(kind, name, params)
    assert str(error.value) == message


@dataclass(frozen=True)
class Labelled:
    """A policy with the parameter types no registered policy has (yet)."""

    label: str = "a"
    size: int | str = 1
    shape: int | tuple[int, ...] = 0


@pytest.mark.parametrize(
    ("param", "value", "expected"),
    [
        ("label", 5, "a string, got 5 (int)"),
        ("size", 2.5, "an integer or a string, got 2.5 (float)"),
        ("size", None, "an integer or a string, got null"),
    ],
)
def test_string_and_union_parameters_are_checked(
    param: str, value: Any, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(ROUTING, "labelled", Labelled)
    with pytest.raises(PolicyConfigError) as error:
        build_policy("routing", "labelled", {param: value})
    assert str(error.value) == (
        f"routing policy 'labelled': parameter {param!r} expects {expected}"
    )


def test_a_union_with_a_non_scalar_is_left_to_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ROUTING, "labelled", Labelled)
    built = build_policy("routing", "labelled", {"label": "b", "size": "x", "shape": (1, 2)})
    assert built == Labelled("b", "x", (1, 2))


@dataclass(frozen=True)
class Scaled:
    """A parameter annotated with a type its module imports only for the type checker."""

    gamma: int = 3
    scale: Fraction | None = None


def scaled(gamma: int = 3, scale: Fraction | None = None) -> Scaled:
    return Scaled(gamma, scale)


@pytest.mark.parametrize("factory", [Scaled, scaled])
def test_an_annotation_that_does_not_resolve_leaves_the_others_checked(
    factory: Callable[..., Scaled], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``typing.get_type_hints`` fails on ``Fraction``: ``gamma`` was left unchecked, and the
    policy built with ``gamma='4'``."""
    monkeypatch.setitem(WINDOW, "scaled", factory)
    with pytest.raises(PolicyConfigError) as error:
        build_policy("window", "scaled", {"gamma": "4"})
    assert str(error.value) == (
        "window policy 'scaled': parameter 'gamma' expects an integer, got '4' (str)"
    )
    assert build_policy("window", "scaled", {"gamma": 4, "scale": None}) == Scaled(4)
