"""Policies by name, as scenario and server configs refer to them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

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


def build_policy(kind: str, name: str, params: Mapping[str, Any] | None = None) -> Any:
    """Instantiate policy ``name`` of ``kind`` with ``params``; unknown names are errors."""
    if kind not in KINDS:
        raise PolicyConfigError(f"unknown policy kind {kind!r}; known: {sorted(KINDS)}")
    registry = KINDS[kind]
    if name not in registry:
        raise PolicyConfigError(f"unknown {kind} policy {name!r}; known: {sorted(registry)}")
    factory = registry[name]
    params = dict(params or {})
    if dataclasses.is_dataclass(factory):
        allowed = {
            f.name for f in dataclasses.fields(factory) if f.init and not f.name.startswith("_")
        }
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise PolicyConfigError(
                f"{kind} policy {name!r} has no parameter(s) {unknown}; known: {sorted(allowed)}"
            )
    try:
        return factory(**params)
    except (TypeError, ValueError) as exc:
        raise PolicyConfigError(f"{kind} policy {name!r}: {exc}") from exc
