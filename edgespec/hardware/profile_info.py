"""What a cost-model profile says of itself, besides its coefficients: whose cost it is
(``role: target`` or ``role: draft``), what clock timed it (``clock: wall`` or ``cpu``),
the model it measured and the largest batch and context it measured
(``measured_max_batch_size``, ``measured_max_context_tokens``). ``edgespec profile``
writes these fields; a profile without them (an older one, a bundled one) still loads,
and is then checked for none of them.

:func:`read_profile_info` checks the fields (``FILE.role: must be 'target' or 'draft',
got 'x'``) and :func:`check_costs` its numbers; :func:`check_role` refuses a profile used
for the other role, and :func:`range_warning` is the line said once when a profile is
used beyond what it measured."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgespec.config import ConfigError
from edgespec.hardware.profile_source import profile_mapping

ROLES = ("target", "draft")
"""Whose cost a profile is: the target's verification pass, or the drafter's passes."""

CLOCKS = ("wall", "cpu")
"""What timed a profile's passes (``edgespec profile --clock``)."""

INFO_FIELDS = (
    "source",
    "hardware",
    "model",
    "role",
    "clock",
    "measured_max_batch_size",
    "measured_max_context_tokens",
)
"""A profile's fields that describe it rather than price a batch."""

_ROLE_COST = {"target": "a verification pass's cost", "draft": "a drafter's cost per propose call"}


@dataclass(frozen=True, slots=True)
class ProfileInfo:
    """A profile's description (``None``: the profile does not say)."""

    where: str
    """The file (or bundled name) the profile was read from."""
    model: str | None
    role: str | None
    clock: str | None
    measured_max_batch_size: int | None
    measured_max_context_tokens: int | None


def read_profile_info(data: Mapping[str, Any], where: str) -> ProfileInfo:
    """The description in a profile's mapping ``data`` read from ``where``; a field of the
    wrong value is a :class:`ConfigError` at ``where.field``."""
    role, clock = data.get("role"), data.get("clock")
    if role is not None and role not in ROLES:
        raise ConfigError(f"{where}.role", f"must be 'target' or 'draft', got {role!r}")
    if clock is not None and clock not in CLOCKS:
        raise ConfigError(f"{where}.clock", f"must be 'wall' or 'cpu', got {clock!r}")
    sizes = []
    for name in ("measured_max_batch_size", "measured_max_context_tokens"):
        value = data.get(name)
        if value is not None and (type(value) is not int or value < 1):
            raise ConfigError(f"{where}.{name}", f"must be an integer >= 1, got {value!r}")
        sizes.append(value)
    model = data.get("model")
    return ProfileInfo(where, model if isinstance(model, str) else None, role, clock, *sizes)


def profile_info(name_or_path: str) -> ProfileInfo:
    """The description of the profile ``name_or_path`` (a file or a bundled name)."""
    data, where = profile_mapping(name_or_path)
    return read_profile_info(data, where)


def check_costs(params: Mapping[str, object], where: str) -> None:
    """A profile's numbers (coefficients, a lookup's lists) are finite and >= 0, refused
    at their field (``FILE.a_s: must be finite and >= 0, got -1.0``); other types are
    left to :func:`from_dict`."""
    for name, value in params.items():
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            number = isinstance(item, int | float) and not isinstance(item, bool)
            if number and not (math.isfinite(item) and item >= 0):
                at = f"{name}[{i}]" if isinstance(value, list) else name
                raise ConfigError(f"{where}.{at}", f"must be finite and >= 0, got {float(item)}")


def check_role(info: ProfileInfo, role: str, user: str) -> None:
    """Refuse a profile whose ``role`` is not ``role`` (one that does not say passes):
    ``FILE.role: is 'draft' (a drafter's cost per propose call); a server's cost model
    needs a 'target' profile (NAME.yaml, not NAME-draft.yaml)``; ``user`` names what
    would use it."""
    if info.role is None or info.role == role:
        return
    sibling = "NAME.yaml, not NAME-draft.yaml" if role == "target" else "NAME-draft.yaml"
    raise ConfigError(
        f"{info.where}.role",
        f"is {info.role!r} ({_ROLE_COST[info.role]}), but {user} needs a {role!r} profile "
        f"({sibling})",
    )


def range_warning(info: ProfileInfo, max_batch_size: int, max_context_tokens: int) -> str | None:
    """The one line saying a profile is used beyond the batch size or context it
    measured (``max_batch_size``, ``max_context_tokens``: the most the user configured),
    or ``None`` within it (or when the profile does not say what it measured)."""
    beyond = []
    measured_batch = info.measured_max_batch_size
    measured_context = info.measured_max_context_tokens
    if measured_batch is not None and max_batch_size > measured_batch:
        beyond.append(f"batches of up to {max_batch_size} (measured up to {measured_batch})")
    if measured_context is not None and max_context_tokens > measured_context:
        beyond.append(
            f"contexts of up to {max_context_tokens} tokens (measured up to {measured_context})"
        )
    if not beyond:
        return None
    return (
        f"warning: profile {info.where} is used for {' and '.join(beyond)}: its times there "
        "are extrapolated; profile a grid that covers them"
    )
