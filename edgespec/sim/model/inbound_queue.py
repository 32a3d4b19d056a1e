"""Blocks in flight to a server, for the inbound handler sets
(:mod:`edgespec.sim.fast.inbound`): each server's ``inbound`` heap of
``(arrival_s, device_id, session)`` and the :class:`DueIndex` of the servers' earliest
inbound times. The router drains them too (:mod:`edgespec.sim.model.router`), so they live
here, with the entities."""

from __future__ import annotations

from heapq import heappop, heappush
from math import inf

from edgespec.sim.model.entities import ServerState


def drain(server: ServerState, t: float, inclusive: bool = True) -> None:
    """Move the inbound blocks that arrived before ``t`` (or at ``t`` if ``inclusive``)
    into the queue, in arrival-event order."""
    inbound = server.inbound
    if not inbound:
        return
    queue = server.queue
    n = server.num_enqueued
    while inbound and (inbound[0][0] < t or (inclusive and inbound[0][0] == t)):
        arrival_s, _, s = heappop(inbound)
        s.enqueued_s = arrival_s
        s.entry_id = n
        n += 1
        queue.append(s)
    server.num_enqueued = n


class DueIndex:
    """The servers' earliest inbound times, for :func:`drain_all`.

    ``listed[server_id]``: a time no later than the server's earliest inbound block when it
    has any (``inf`` when nothing is listed); ``heap``: ``(time, server_id)`` entries, the
    current one of each server and stale ones (whose time is no longer listed), skipped
    when popped. A dispatch that drains a server leaves its entry as it is (the listed
    time is then only earlier than the new earliest block, which is all the index needs).
    """

    __slots__ = ("heap", "listed")

    def __init__(self, num_servers: int) -> None:
        self.heap: list[tuple[float, int]] = []
        self.listed = [inf] * num_servers

    def sent(self, arrival_s: float, server_id: int) -> None:
        """A block for ``server_id`` arrives at ``arrival_s`` (after the inbound push)."""
        if arrival_s < self.listed[server_id]:
            self.listed[server_id] = arrival_s
            heappush(self.heap, (arrival_s, server_id))
