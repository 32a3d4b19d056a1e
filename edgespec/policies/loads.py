"""The one place that builds what a routing policy sees, for the simulator and the real
drafter alike: one server's :class:`~edgespec.core.types.ServerLoad` from its counters
(:func:`server_load`, by name, so each host's counter lands in the same field) and the
servers' loads as a :class:`LoadView`.

A :class:`LoadView` is a read-only ``Sequence[ServerLoad]`` (so every routing policy reads
it as it would a list: ``len``, indexing, iteration) that a host keeps up to date one
server at a time (:meth:`LoadView.update`) instead of rebuilding the list per request, and
that answers the queries a policy over thousands of servers needs without scanning them:

- :meth:`LoadView.least_loaded`: the servers with the lexicographically smallest
  ``(queue_depth, num_active_sessions)``, in view order (join-shortest-queue's ties), in
  O(log distinct loads) plus a bucket per change;
- :meth:`LoadView.update`: one server's new load, in O(1) when its
  ``(queue_depth, num_active_sessions)`` is unchanged;
- :meth:`LoadView.position`: where a ``server_id`` sits (:func:`check_route
  <edgespec.policies.contracts.check_route>` in O(1)).

A policy reads the view only during its ``route`` call: the host changes it afterwards
(a policy that keeps loads must copy them, ``list(loads)``).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator, Sequence
from heapq import heappop, heappush
from typing import overload

from edgespec.core.frozen import frozen_builder
from edgespec.core.types import ServerLoad

_SPAN = 1 << 32
"""Index key of a load: ``queue_depth * _SPAN + num_active_sessions`` (both below 2**32),
ordered as the pair ``(queue_depth, num_active_sessions)``."""

_server_load = frozen_builder(ServerLoad)  # ServerLoad(...), built per read


def server_load(
    server_id: int, *, num_active_sessions: int, queue_depth: int, busy: bool
) -> ServerLoad:
    """What a routing policy sees of server ``server_id``: ``num_active_sessions``, the
    sessions it holds; ``queue_depth``, its verifications waiting, not yet in a batch;
    ``busy``, a verification pass running. Both hosts build every load here (the simulator
    from a ``ServerState``, the drafter from a server's ``Stats``)."""
    return _server_load(server_id, queue_depth, num_active_sessions, busy)


class _Members(Sequence[ServerLoad]):
    """The loads at some positions of a view (a read-only window, nothing copied)."""

    __slots__ = ("_positions", "_view")

    def __init__(self, view: LoadView, positions: list[int]) -> None:
        self._view = view
        self._positions = positions

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, index: int) -> ServerLoad: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ServerLoad]: ...
    def __getitem__(self, index: int | slice) -> ServerLoad | Sequence[ServerLoad]:
        if isinstance(index, slice):
            return [self._view[p] for p in self._positions[index]]
        return self._view[self._positions[index]]


class LoadView(Sequence[ServerLoad]):
    """Server loads in a fixed order, indexed by their ``(queue_depth,
    num_active_sessions)`` (see the module docstring). The loads are kept field by field
    and a :class:`ServerLoad` is built when one is read."""

    __slots__ = ("_active", "_buckets", "_busy", "_depth", "_ids", "_keys", "_listed", "_positions")

    def __init__(self, loads: Iterable[ServerLoad]) -> None:
        shown = list(loads)
        self._ids = [load.server_id for load in shown]
        self._depth = [load.queue_depth for load in shown]
        self._active = [load.num_active_sessions for load in shown]
        self._busy = [load.busy for load in shown]
        self._positions: dict[int, int] = {}
        # Positions by key, each bucket sorted; a heap of the keys with a bucket (an
        # emptied bucket's key leaves the heap when it reaches the top; ``_listed`` holds
        # the keys in the heap, so none is pushed twice and the heap stays small).
        self._buckets: dict[int, list[int]] = {}
        self._keys: list[int] = []
        self._listed: set[int] = set()
        for position, load in enumerate(shown):
            if load.server_id in self._positions:
                raise ValueError(f"server {load.server_id} appears twice in the loads")
            if not 0 <= load.num_active_sessions < _SPAN or load.queue_depth < 0:
                raise ValueError(f"server {load.server_id}: load out of range: {load}")
            self._positions[load.server_id] = position
            self._add(position, load.queue_depth * _SPAN + load.num_active_sessions)

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, index: int) -> ServerLoad: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ServerLoad]: ...
    def __getitem__(self, index: int | slice) -> ServerLoad | Sequence[ServerLoad]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self._ids))[index]]
        return _server_load(
            self._ids[index], self._depth[index], self._active[index], self._busy[index]
        )

    def __iter__(self) -> Iterator[ServerLoad]:
        for i in range(len(self._ids)):
            yield self[i]

    def position(self, server_id: int) -> int | None:
        """Where ``server_id`` sits in the view (``None``: not one of its servers)."""
        return self._positions.get(server_id)

    def update(self, position: int, queue_depth: int, num_active_sessions: int, busy: bool) -> None:
        """The server at ``position`` now has this load."""
        self._busy[position] = busy
        depth, active = self._depth, self._active
        old_depth, old_active = depth[position], active[position]
        if old_depth == queue_depth and old_active == num_active_sessions:
            return
        depth[position] = queue_depth
        active[position] = num_active_sessions
        buckets = self._buckets
        old_key = old_depth * _SPAN + old_active
        bucket = buckets[old_key]
        if len(bucket) == 1:
            del buckets[old_key]
        else:
            del bucket[bisect_left(bucket, position)]
        self._add(position, queue_depth * _SPAN + num_active_sessions)

    def num_least_loaded(self) -> int:
        """``len(least_loaded())``, in O(1)."""
        return len(self._least())

    def least_loaded_ids(self) -> list[int]:
        """The ``server_id`` of each of :meth:`least_loaded`, in the same order."""
        ids = self._ids
        return [ids[p] for p in self._least()]

    def least_loaded(self) -> Sequence[ServerLoad]:
        """The loads with the smallest ``(queue_depth, num_active_sessions)``, in view
        order (what ``JoinShortestQueueRouting`` chooses among)."""
        return _Members(self, self._least())

    def _least(self) -> list[int]:
        keys, buckets = self._keys, self._buckets
        while keys and keys[0] not in buckets:  # an emptied bucket's key
            self._listed.discard(heappop(keys))
        return buckets[keys[0]] if keys else []

    def _add(self, position: int, key: int) -> None:
        bucket = self._buckets.get(key)
        if bucket is None:
            self._buckets[key] = [position]
            if key not in self._listed:
                self._listed.add(key)
                heappush(self._keys, key)
        else:
            insort(bucket, position)
