"""The inbound handler sets' blocks in flight: no per-round ARRIVE event.

The reference schedules one ARRIVE event per round; its handler appends the
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
the reference ARRIVE does, so every observable is unchanged (tests/sim/test_handler_sets.py).

Routing must not visit every server to bring the queues up to date: a
:class:`~edgespec.sim.model.inbound_queue.DueIndex`
lists, per server with blocks in flight, a time no later than its earliest inbound block,
in one heap, so :func:`drain_all` visits only the servers with blocks due (each block
sent pushes an entry only when it is earlier than its server's listed time).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from math import inf

from edgespec.sim.events import ARRIVE, DISPATCH
from edgespec.sim.kernel import Handler
from edgespec.sim.model.entities import ServerState, Session
from edgespec.sim.model.inbound_queue import drain
from edgespec.sim.state import SimState

Touch = Callable[[ServerState], None]
"""Marks a server whose load changed, for the router (``Router.touched.add``)."""


def drain_all(state: SimState, touch: Touch, t: float, inclusive: bool) -> None:
    """:func:`~edgespec.sim.model.inbound_queue.drain` on every server with blocks due
    (before routing reads the queues), marking them for the router; visits only those
    servers (:class:`~edgespec.sim.model.inbound_queue.DueIndex`)."""
    due = state.due
    heap, listed = due.heap, due.listed
    servers = state.servers
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


def arm(state: SimState, server: ServerState) -> None:
    """Schedule a WAKE at the earliest inbound block of an idle server (if none earlier)."""
    inbound = server.inbound
    if inbound and inbound[0][0] < server.wake_s:
        arrival_s, device_id, _ = inbound[0]
        server.wake_s = arrival_s
        state.q.push(arrival_s, ARRIVE, device_id, server)


def send(state: SimState, arrival_s: float, s: Session) -> None:
    """A block leaves its device; it reaches ``s.server`` at ``arrival_s``."""
    server = s.server
    heappush(server.inbound, (arrival_s, s.device.device_id, s))
    state.due.sent(arrival_s, server.server_id)
    if not server.busy and not server.dispatch_pending:
        arm(state, server)


def wake_handler(state: SimState, touch: Touch, dispatch: Handler | None) -> Handler:
    """The WAKE event (in ARRIVE's slot): what the ARRIVE finding the server idle does.
    ``dispatch``: run at once when no other event shares the time; ``None``: a DISPATCH
    event every time."""
    push = state.q.raw_push()
    heap = state.q.heap
    arrivals = state.q.arrivals_heap

    def wake(t: float, server: ServerState) -> None:
        if server.wake_s == t:
            server.wake_s = inf
        if server.busy or server.dispatch_pending:
            return  # a dispatch already took (or will take) the due blocks
        before = server.num_enqueued
        drain(server, t)
        touch(server)
        if server.num_enqueued == before:  # stale: its block went with an earlier batch
            arm(state, server)
        elif dispatch is None or (heap and heap[0][0] <= t) or (arrivals and arrivals[0][0] <= t):
            server.dispatch_pending = True
            push(t, DISPATCH, server.server_id, server)
        else:  # no other event at t: the DISPATCH would run next anyway
            dispatch(t, server)

    return wake
