"""Policies by name, as scenario and server configs refer to them."""

from __future__ import annotations

import dataclasses
import inspect
import numbers
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from edgespec.errors import did_you_mean
from edgespec.policies.awc import load_awc_window
from edgespec.policies.batching import FcfsBatching, LengthAwareBatching
from edgespec.policies.interfaces import BatchingPolicy, RoutingPolicy, WindowPolicy
from edgespec.policies.routing import JoinShortestQueueRouting, RandomRouting, RoundRobinRouting
from edgespec.policies.stop_drafting import DraftStopPolicy, load_stop_policy
from edgespec.policies.window import DynamicWindow, StaticWindow
from edgespec.policies.wisp import wisp_batching

ROUTING: dict[str, Callable[..., RoutingPolicy]] = {
    "random": RandomRouting,
    "round_robin": RoundRobinRouting,
    "jsq": JoinShortestQueueRouting,
}
BATCHING: dict[str, Callable[..., BatchingPolicy]] = {
    "fcfs": FcfsBatching,
    "lab": LengthAwareBatching,
    "wisp": wisp_batching,
}
WINDOW: dict[str, Callable[..., WindowPolicy]] = {
    "static": StaticWindow,
    "dynamic": DynamicWindow,
    "awc": load_awc_window,
}
STOP: dict[str, Callable[..., DraftStopPolicy]] = {
    "mlp": load_stop_policy,
}
KINDS: dict[str, Mapping[str, Callable[..., Any]]] = {
    "routing": ROUTING,
    "batching": BATCHING,
    "window": WINDOW,
    "stop": STOP,
}


class PolicyConfigError(ValueError):
    """A policy name or parameter that does not exist."""


class UnknownParamsError(PolicyConfigError):
    """Parameters the policy does not take; the message lists those it does."""


def accepted_params(kind: str, name: str) -> tuple[str, ...] | None:
    """The parameters policy ``name`` of ``kind`` takes, sorted (a dataclass's public init
    fields, a factory's keyword parameters); ``None`` for a factory taking ``**kwargs``."""
    factory = KINDS[kind][name]
    if dataclasses.is_dataclass(factory):
        fields = dataclasses.fields(factory)
        return tuple(sorted(f.name for f in fields if f.init and not f.name.startswith("_")))
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature to read: the factory's own checks apply
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return tuple(sorted(p.name for p in params if p.kind in kinds))


def build_policy(kind: str, name: str, params: Mapping[str, Any] | None = None) -> Any:
    """Instantiate policy ``name`` of ``kind`` with ``params``; unknown names are errors,
    unknown parameters an :class:`UnknownParamsError`, each ending with the closest known
    name (``(did you mean 'fcfs'?)``) when one is close."""
    if kind not in KINDS:
        raise PolicyConfigError(
            f"unknown policy kind {kind!r}; known: {sorted(KINDS)}{did_you_mean(kind, KINDS)}"
        )
    registry = KINDS[kind]
    if name not in registry:
        raise PolicyConfigError(
            f"unknown {kind} policy {name!r}; known: {sorted(registry)}"
            + did_you_mean(name, registry)
        )
    factory = registry[name]
    params = dict(params or {})
    allowed = accepted_params(kind, name)
    unknown = sorted(set(params) - set(allowed if allowed is not None else params))
    if unknown:
        raise UnknownParamsError(
            f"{kind} policy {name!r} has no parameter(s) {unknown}; known: {list(allowed or ())}"
            + did_you_mean(str(unknown[0]), allowed or ())
        )
    if dataclasses.is_dataclass(factory):
        _check_scalar_params(f"{kind} policy {name!r}", factory, params)
    try:
        return factory(**params)
    except (TypeError, ValueError) as exc:
        raise PolicyConfigError(f"{kind} policy {name!r}: {exc}") from exc


_SCALARS: dict[Any, tuple[str, Callable[[object], bool]]] = {
    bool: ("true/false", lambda v: isinstance(v, bool)),
    int: ("an integer", lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool)),
    float: ("a number", lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool)),
    str: ("a string", lambda v: isinstance(v, str)),
}


def _check_scalar_params(what: str, factory: Any, params: Mapping[str, Any]) -> None:
    """A parameter declared as a bool, int, float or str (or such ``| None``) given a value
    of another type is named here, instead of failing later inside the policy."""
    try:
        hints = typing.get_type_hints(factory)
    except (NameError, TypeError):  # an annotation this module cannot resolve: unchecked
        return
    for param, value in params.items():
        declared = hints.get(param)
        union = typing.get_origin(declared) in (typing.Union, types.UnionType)
        options = [t for t in (typing.get_args(declared) if union else (declared,))]
        if value is None and type(None) in options:
            continue
        options = [t for t in options if t is not type(None)]
        if not options or any(t not in _SCALARS for t in options):
            continue  # not a plain scalar: the policy's own checks apply
        if not any(_SCALARS[t][1](value) for t in options):
            expected = " or ".join(_SCALARS[t][0] for t in options)
            raise PolicyConfigError(
                f"{what}: parameter {param!r} expects {expected}, "
                f"got {value!r} ({type(value).__name__})"
            )
