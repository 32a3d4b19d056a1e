"""A request's ``edgespec`` object, checked as it is read: ``slo_class`` (its class on the
verification server), ``window`` (a window policy of its own: a name, or ``{name,
params}``) and ``mode``: ``"distributed"`` (drafted here, verified on the server) or
``"centralized"`` (the server decodes alone: the baseline, through the same endpoint).
Absent fields take the endpoint's defaults (``edgespec draft``'s flags)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from edgespec.runtime.openai_api.errors import clip, invalid, shown
from edgespec.runtime.openai_api.fields import UNKNOWN
from edgespec.runtime.validation import MAX_IDENTIFIER_CHARS

MODES = ("distributed", "centralized")
"""A request's ``edgespec.mode``s (``edgespec draft --mode``'s, but ``fused``)."""

_FIELDS = ("mode", "slo_class", "window")


@dataclass(frozen=True, slots=True)
class WindowChoice:
    """The ``edgespec.window`` extension: a window policy by name and its parameters."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Extension:
    """A request's ``edgespec`` object, its defaults filled in."""

    slo_class: str
    window: WindowChoice | None
    mode: str


def parse_extension(body: Mapping[str, Any], slo_class: str, mode: str) -> Extension:
    """The ``edgespec`` object of ``body``; ``slo_class`` and ``mode``: the endpoint's
    defaults. A centralized request that names a window is refused: it drafts nothing."""
    ext = body.get("edgespec")
    if ext is None:
        ext = {}
    if not isinstance(ext, dict):
        raise invalid(f"edgespec must be an object, got {shown(ext)}", param="edgespec")
    unknown = sorted(set(ext) - set(_FIELDS))
    if unknown:
        raise invalid(f"edgespec has unknown fields {shown(unknown)} (known: "
                      f"{', '.join(_FIELDS)})", param="edgespec", code=UNKNOWN)  # fmt: skip
    slo = ext.get("slo_class", slo_class)
    if not isinstance(slo, str) or not slo:
        raise invalid(f"edgespec.slo_class must be a non-empty string, got {shown(slo)}",
                      param="edgespec.slo_class")  # fmt: skip
    if len(slo) > MAX_IDENTIFIER_CHARS:
        raise invalid(f"edgespec.slo_class is {len(slo)} characters; the limit is "
                      f"{MAX_IDENTIFIER_CHARS}", param="edgespec.slo_class")  # fmt: skip
    chosen = ext.get("mode", mode)
    if chosen not in MODES:
        raise invalid(f"edgespec.mode must be one of {shown(list(MODES))}, got "
                      f"{shown(chosen)}", param="edgespec.mode")  # fmt: skip
    window = ext.get("window")
    if window is not None and chosen == "centralized":
        raise invalid("edgespec.window: a centralized request drafts nothing (the server "
                      "decodes alone); drop the window or ask edgespec.mode "
                      '"distributed"', param="edgespec.window")  # fmt: skip
    return Extension(slo, None if window is None else _window(window), chosen)


def _window(window: Any) -> WindowChoice:
    """``edgespec.window``: a policy name, or ``{name, params}`` and nothing else; the name
    at most :data:`MAX_IDENTIFIER_CHARS` (an unknown one is looked up for the closest
    known name, a cost that grows with its length)."""
    params = window.get("params") if isinstance(window, dict) else None
    params = {} if params is None else params  # null, as everywhere, is absent
    name = window.get("name") if isinstance(window, dict) else window
    if not isinstance(name, str) or not isinstance(params, dict):
        raise invalid(f"edgespec.window must be a policy name or {{name, params}}, got "
                      f"{shown(window)}", param="edgespec.window")  # fmt: skip
    unknown = sorted(set(window) - {"name", "params"}) if isinstance(window, dict) else []
    if unknown:
        raise invalid(f"edgespec.window has unknown fields {shown(unknown)} (known: name, "
                      "params)", param="edgespec.window", code=UNKNOWN)  # fmt: skip
    if len(name) > MAX_IDENTIFIER_CHARS:
        raise invalid(f"edgespec.window names a policy of {len(name)} characters; the limit "
                      f"is {MAX_IDENTIFIER_CHARS}", param="edgespec.window")  # fmt: skip
    for key, value in params.items():  # a string could name a file on this machine (awc's)
        if not isinstance(value, int | float) or (
            isinstance(value, float) and not math.isfinite(value)
        ):
            raise invalid(f"edgespec.window.params.{clip(key)}: a request's window parameters "
                          f"are finite numbers or booleans, got {shown(value)}",
                          param="edgespec.window")  # fmt: skip
    return WindowChoice(name, params)
