"""A config field shared by the simulator's scenarios and the runtime's configs
(:mod:`edgespec.runtime.server.config`): a policy by registry name."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True, slots=True)
class PolicySpec:
    """A policy by registry name plus its keyword parameters."""

    name: str
    params: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({})
    )
