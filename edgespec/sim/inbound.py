"""Fast path without a per-round ARRIVE event: per-server inbound heaps.

The straightforward path schedules one ARRIVE event per round; its handler appends the
block to the server's queue and, when the server is idle, schedules a DISPATCH at that
time. Here a block in flight waits instead in its server's *inbound* heap, ordered by
``(arrival_s, device_id)`` — the order in which the kernel would run those ARRIVE events
(same time, same kind: entity order; a device has at most one block in flight, so the
pair is unique). The queue is brought up to date lazily, exactly where it is read:

* a DISPATCH at ``t`` (which runs after every other event at ``t``) first moves every
  inbound block with ``arrival_s <= t`` into the queue;
* routing, at an event of kind ``K`` at ``t``, moves blocks with ``arrival_s < t``, and
  those with ``arrival_s == t`` when ``K`` runs after ARRIVE (REQUEST does, DELIVER
  does not);
* a BATCH_END at ``t`` dispatches when the queue or the inbound blocks due by ``t`` are
  non-empty (an ARRIVE at ``t`` would have triggered that DISPATCH at ``t`` anyway).

An idle server gets one WAKE event (kind ARRIVE, entity the device of its earliest
inbound block) at that block's time: the ARRIVE that would have found it idle. A WAKE
that finds nothing due (its block was taken by an earlier dispatch) re-arms for the
next one and must not dispatch (no ARRIVE happens at its time). Moving a block sets
``enqueued_s`` to its arrival time and ``entry_id`` in queue order, as
``Simulation._arrive`` does, so every observable is unchanged (tests/sim/test_fast_path.py).

Routing must not visit every server to bring the queues up to date: a :class:`DueIndex`
lists, per server with blocks in flight, a time no later than its earliest inbound block,
in one heap, so :func:`drain_all` visits only the servers with blocks due (each block
sent pushes an entry only when it is earlier than its server's listed time).
"""

from __future__ import annotations

from heapq import heappop, heappush
from math import inf
from typing import TYPE_CHECKING

from edgespec.sim.entities import ServerState, Session
from edgespec.sim.kernel import Handler

if TYPE_CHECKING:
    from edgespec.sim.engine import Simulation


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


def drain_all(engine: Simulation, t: float, inclusive: bool) -> None:
    """:func:`drain` on every server with blocks due (before routing reads the queues),
    marking them for the router; visits only those servers (:class:`DueIndex`)."""
    due = engine.due
    heap, listed = due.heap, due.listed
    servers = engine.servers
    touch = engine.touch
    while heap and (heap[0][0] < t or (inclusive and heap[0][0] == t)):
        listed_s, server_id = heappop(heap)
        if listed[server_id] != listed_s:
            continue  # stale: a later send listed an earlier time, or it was re-listed
        server = servers[server_id]
        drain(server, t, inclusive)
        touch(server)
        inbound = server.inbound
        if inbound:  # every block due by t has moved: the earliest is later than listed_s
            listed_s = listed[server_id] = inbound[0][0]
            heappush(heap, (listed_s, server_id))
        else:
            listed[server_id] = inf


def arm(engine: Simulation, server: ServerState, wake_kind: int) -> None:
    """Schedule a WAKE at the earliest inbound block of an idle server (if none earlier)."""
    inbound = server.inbound
    if inbound and inbound[0][0] < server.wake_s:
        arrival_s, device_id, _ = inbound[0]
        server.wake_s = arrival_s
        engine.q.push(arrival_s, wake_kind, device_id, server)


def send(engine: Simulation, arrival_s: float, s: Session, wake_kind: int) -> None:
    """A block leaves its device; it reaches ``s.server`` at ``arrival_s``."""
    server = s.server
    heappush(server.inbound, (arrival_s, s.device.device_id, s))
    engine.due.sent(arrival_s, server.server_id)
    if not server.busy and not server.dispatch_pending:
        arm(engine, server, wake_kind)


def wake_handler(
    engine: Simulation, dispatch: Handler | None, wake_kind: int, dispatch_kind: int
) -> Handler:
    """The WAKE event (in ARRIVE's slot): what the ARRIVE finding the server idle does.
    ``dispatch`` (the fast path): run at once when no other event shares the time;
    ``None``: a DISPATCH event every time."""
    push = engine.q.raw_push()
    heap = engine.q.heap
    arrivals = engine.q.arrivals_heap
    touch = engine.touch

    def wake(t: float, server: ServerState) -> None:
        if server.wake_s == t:
            server.wake_s = inf
        if server.busy or server.dispatch_pending:
            return  # a dispatch already took (or will take) the due blocks
        before = server.num_enqueued
        drain(server, t)
        touch(server)
        if server.num_enqueued == before:  # stale: its block went with an earlier batch
            arm(engine, server, wake_kind)
        elif dispatch is None or (heap and heap[0][0] <= t) or (arrivals and arrivals[0][0] <= t):
            server.dispatch_pending = True
            push(t, dispatch_kind, server.server_id, server)
        else:  # no other event at t: the DISPATCH would run next anyway
            dispatch(t, server)

    return wake
