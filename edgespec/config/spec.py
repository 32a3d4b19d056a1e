"""A config field shared by the simulator's scenarios and the runtime's configs
(:mod:`edgespec.runtime.server.config`): a policy by registry name, and the metadata key
that names a policy field's kind."""

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


POLICY_KIND = "policy_kind"
"""The field metadata key naming the registry kind (``stop``, ``batching``) of a policy
field without a default policy (``field(default=None, metadata={POLICY_KIND: "stop"})``):
given only params, it is refused listing that kind's names
(:func:`edgespec.config.default_policy_names`)."""
