"""Policies by name, as scenario and server configs refer to them.

Both hosts build a policy from its spec with :func:`build_policy_at` (errors at the
config field that named it); :func:`window_fuses` says from a window policy's spec, before
any policy object exists, whether its rounds may go fused. A new policy is added as
docs/SIMULATOR.md, "Adding a policy", says.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import numbers
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from edgespec.config import ConfigError, PolicySpec, describe_value
from edgespec.errors import did_you_mean
from edgespec.policies.awc import load_awc_window
from edgespec.policies.batching import DecodesFirstBatching, FcfsBatching, LengthAwareBatching
from edgespec.policies.drafting_server.planner import PipelinePlanner
from edgespec.policies.interfaces import (
    BatchingPolicy,
    DraftingPlanner,
    RoutingPolicy,
    SemanticHead,
    WindowPolicy,
)
from edgespec.policies.params import PolicyParamError
from edgespec.policies.routing import JoinShortestQueueRouting, RandomRouting, RoundRobinRouting
from edgespec.policies.semantic.head import head_policy
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
    "decodes-first": DecodesFirstBatching,
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
PLANNER: dict[str, Callable[..., DraftingPlanner]] = {
    "zhu": PipelinePlanner,  # its costs (PipelineCosts) are a parameter the host gives
}
HEAD: dict[str, Callable[..., SemanticHead]] = {
    "wisv": head_policy,  # path: a head saved as JSON
}
KINDS: dict[str, Mapping[str, Callable[..., Any]]] = {
    "routing": ROUTING,
    "batching": BATCHING,
    "window": WINDOW,
    "stop": STOP,
    "planner": PLANNER,
    "head": HEAD,
}

WINDOW_FUSES: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "static": lambda params: bool(params.get("fused", False)),
    "dynamic": lambda params: False,
    "awc": lambda params: True,
}
"""Whether a window policy's rounds may go fused in ``distributed`` mode, from its
parameters (StaticWindow: its ``fused``; DynamicWindow: never; AWC: yes): read from the
spec before the policy exists, to give each server pool its co-located draft only when a
round may go fused (a name without an entry: it may). Every ``WINDOW`` name has one, equal
to its built policy's ``may_fuse`` (:func:`edgespec.policies.fusing.fusing`, which picks
the simulator's handler set) with the default parameters: tests/policies/test_registry.py.
"""


class PolicyConfigError(ValueError):
    """A policy name or parameter that does not exist."""


class UnknownPolicyError(PolicyConfigError):
    """A policy name (or kind) the registry does not have."""


class UnknownParamsError(PolicyConfigError):
    """Parameters the policy does not take; the message lists those it does."""


class ParamValueError(PolicyConfigError):
    """A parameter of the wrong type or out of its range; ``param`` names it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param

    def __reduce__(self) -> tuple[type[ParamValueError], tuple[str, str]]:
        return (type(self), (self.param, str(self)))


def window_fuses(spec: PolicySpec) -> bool | None:
    """Whether the window policy ``spec`` names may run fused rounds in ``distributed``
    mode (:data:`WINDOW_FUSES`); ``None`` for a policy registered without that fact."""
    says = WINDOW_FUSES.get(spec.name)
    return None if says is None else says(spec.params)


def build_policy_at(field: str, kind: str, spec: PolicySpec) -> Any:
    """The policy ``spec`` names, of ``kind``, for the config field ``field``: a
    :class:`ConfigError` at ``field.name`` for an unknown name, at ``field.params`` for a
    parameter the policy does not take (listing those it does), at ``field.params.<name>``
    for a parameter of the wrong type or out of range (:class:`ParamValueError`), at
    ``field`` otherwise."""
    try:
        return build_policy(kind, spec.name, spec.params)
    except UnknownPolicyError as exc:
        raise ConfigError(f"{field}.name", str(exc)) from exc
    except UnknownParamsError as exc:
        raise ConfigError(f"{field}.params", str(exc)) from exc
    except ParamValueError as exc:
        raise ConfigError(f"{field}.params.{exc.param}", str(exc)) from exc
    except PolicyConfigError as exc:
        raise ConfigError(field, str(exc)) from exc


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
    name (``(did you mean 'fcfs'?)``) when one is close; a parameter whose value does not
    have its annotated type (a dataclass field's, a factory's signature's), or that the
    policy refuses with a :class:`PolicyParamError`, a :class:`ParamValueError`."""
    if kind not in KINDS:
        raise UnknownPolicyError(
            f"unknown policy kind {kind!r}; known: {sorted(KINDS)}{did_you_mean(kind, KINDS)}"
        )
    registry = KINDS[kind]
    if name not in registry:
        raise UnknownPolicyError(
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
    _check_scalar_params(f"{kind} policy {name!r}", factory, params)
    try:
        return factory(**params)
    except PolicyParamError as exc:
        raise ParamValueError(exc.param, f"{kind} policy {name!r}: {exc}") from exc
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
    of another type is named here, instead of failing later inside the policy: a
    dataclass's field annotations, a class's ``__init__``'s, a factory function's (each
    resolved on its own where another does not resolve: :func:`_param_hints`)."""
    annotated = factory
    if inspect.isclass(factory) and not dataclasses.is_dataclass(factory):
        annotated = factory.__init__
    hints = _param_hints(annotated)
    hints.pop("return", None)
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
            raise ParamValueError(
                param,
                f"{what}: parameter {param!r} expects {expected}, got {describe_value(value)}",
            )


def _param_hints(annotated: Any) -> dict[str, Any]:
    """``annotated``'s annotations, resolved (:func:`typing.get_type_hints`); when one of
    them cannot be (a name its module imports only under ``TYPE_CHECKING``, which would
    leave every parameter unchecked), each one alone in its own scope: those that resolve
    are checked, the others left out (a name that does not resolve is no builtin scalar:
    the policy's own checks apply to it)."""
    with contextlib.suppress(Exception):  # any annotation that does not evaluate
        return typing.get_type_hints(annotated)
    hints: dict[str, Any] = {}
    for raw, globalns, localns in _annotation_scopes(annotated):
        for name, annotation in raw.items():
            alone = types.SimpleNamespace(__annotations__={name: annotation})
            try:
                hints[name] = typing.get_type_hints(alone, globalns, localns)[name]
            except Exception:  # unresolvable here: left to the policy's own checks
                hints.pop(name, None)
    return hints


Scope = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]


def _annotation_scopes(annotated: Any) -> list[Scope]:
    """Where each of ``annotated``'s own annotations is written, base classes first: its
    raw annotations, its module's names and its class's names."""
    if not inspect.isclass(annotated):
        function = inspect.unwrap(annotated)
        names = getattr(function, "__globals__", {})  # none: a callable object
        return [(dict(getattr(function, "__annotations__", {})), names, {})]
    return [
        (
            dict(vars(owner).get("__annotations__", {})),
            dict(vars(sys.modules[owner.__module__])) if owner.__module__ in sys.modules else {},
            dict(vars(owner)),
        )
        for owner in reversed(annotated.__mro__)
    ]
