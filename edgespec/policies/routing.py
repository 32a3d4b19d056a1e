"""Routing policies: which target server a new session goes to (DSD §3.4)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from edgespec.core.types import ServerLoad
from edgespec.policies.loads import LoadView


def _require_servers(loads: Sequence[ServerLoad]) -> None:
    if not loads:
        raise ValueError("routing needs at least one server")


@dataclass(frozen=True, slots=True)
class RandomRouting:
    """Uniformly random server."""

    def route(self, loads: Sequence[ServerLoad], rng: np.random.Generator) -> int:
        _require_servers(loads)
        return loads[int(rng.integers(len(loads)))].server_id


@dataclass(slots=True)
class RoundRobinRouting:
    """Servers in turn. The cursor is the policy's only state and belongs to the instance."""

    _cursor: int = field(default=0)

    def route(self, loads: Sequence[ServerLoad], rng: np.random.Generator) -> int:
        _require_servers(loads)
        chosen = loads[self._cursor % len(loads)].server_id
        self._cursor += 1
        return chosen


@dataclass(frozen=True, slots=True)
class JoinShortestQueueRouting:
    """Fewest queued verifications, then fewest active sessions; ties broken at random
    (uniformly among the tied servers in load order: one draw, only when there is a tie).
    A :class:`~edgespec.policies.loads.LoadView` answers the tied servers from its index;
    a plain sequence is scanned (the same servers, in the same order)."""

    def route(self, loads: Sequence[ServerLoad], rng: np.random.Generator) -> int:
        _require_servers(loads)
        tied: Sequence[ServerLoad]
        if isinstance(loads, LoadView):
            tied = loads.least_loaded()
        else:
            best = min((load.queue_depth, load.num_active_sessions) for load in loads)
            tied = [load for load in loads if (load.queue_depth, load.num_active_sessions) == best]
        return tied[int(rng.integers(len(tied)))].server_id if len(tied) > 1 else tied[0].server_id
