"""Routing a new session in the simulator, at a cost independent of the fleet's size.

The routing policy sees its servers' loads as a :class:`~edgespec.policies.loads.LoadView`
(the shared builder the real drafter uses too), one view per *cell* (a scenario whose
device pools are pinned to server pools routes each device among its cell's servers only;
otherwise there is one cell holding every server). The views are not rebuilt per request:
every handler that changes a server's queue length, active sessions or ``busy`` flag
marks the server (``Router.touched``, a set), and :meth:`Router.refresh` rewrites only
the marked servers' loads before a route.

Without per-round ARRIVE events (:mod:`edgespec.sim.fast.inbound`) a server's queue is its
``queue`` plus the inbound blocks due by the routing time. A policy called with the view
may read any load, so the engine first drains every server with blocks due
(:func:`~edgespec.sim.fast.inbound.drain_all`). Join-shortest-queue inlined (the ``fast`` set)
needs less: the view's queue depths are then lower bounds, and only the least-loaded
servers are drained, until none of them has a block due (:meth:`Router.route`); any
other server's bound already exceeds the least load, so its true load does too.

Checking the tied servers one by one costs a few operations per tie, and the ties grow
with the fleet (hundreds of servers tie at 2,000 servers). Draining every server with
blocks due costs a server visit per block sent since the last such drain (each block
lists its server at most twice in the :class:`~edgespec.sim.fast.inbound.DueIndex`), i.e. a
bounded cost per round, whatever the fleet. The router rents before it buys: it checks
ties until the checks made since the last full drain, this route's included, exceed
:data:`SCAN_FLOOR` + :data:`SCAN_PER_ROUND` × the rounds verified since then, and then
drains every server with blocks due. A route's settling thus costs at most about twice
the cheaper of the two, per round, at any fleet size. Same ties, same draws as a policy
shown the full, exact list (tests/parity, tests/sim).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import numpy as np

from edgespec.core.types import ServerLoad
from edgespec.policies.contracts import decide_route
from edgespec.policies.interfaces import RoutingPolicy
from edgespec.policies.loads import LoadView, server_load
from edgespec.sim.model.entities import ServerState
from edgespec.sim.model.inbound_queue import drain
from edgespec.sim.model.layout import Layout
from edgespec.sim.model.rng import spawn_generator

SCAN_FLOOR = 16
SCAN_PER_ROUND = 4
"""Inlined join-shortest-queue checks the tied least-loaded servers one by one while the
checks since it last drained every server with blocks due (this route's ties included)
are at most ``SCAN_FLOOR + SCAN_PER_ROUND * rounds`` (the rounds verified since that
drain: a check costs a few times less than a server's drain)."""


def load_of(s: ServerState) -> ServerLoad:
    """What a routing policy sees of ``s`` now (its queue as it stands)."""
    return server_load(
        s.server_id, num_active_sessions=s.num_active, queue_depth=len(s.queue), busy=s.busy
    )


class Cell:
    """One routing domain: its servers' view, its policy instance and random stream."""

    __slots__ = ("policy", "rng", "view")

    def __init__(
        self, servers: Sequence[ServerState], policy: RoutingPolicy, rng: np.random.Generator
    ) -> None:
        self.view = LoadView(load_of(s) for s in servers)
        self.policy = policy
        self.rng = rng


def build_cells(
    servers: Sequence[ServerState], layout: Layout, policy: RoutingPolicy, seed: int
) -> list[Cell]:
    """One :class:`Cell` per slot of ``layout``: its servers, the routing stream of its
    cell (the scenario-wide one when unpinned) and a policy instance of its own (a copy
    of ``policy`` when there are several, so a round-robin cursor is per cell)."""
    cells = []
    for slot, cell_id in enumerate(layout.cell_ids):
        members = [s for s in servers if layout.server_slot[s.server_id] == slot]
        own = policy if len(layout.cell_ids) == 1 else copy.deepcopy(policy)
        cells.append(Cell(members, own, spawn_generator(seed, "routing", cell_id)))
    return cells


class Router:
    """The cells of a run and the servers whose load changed since the last route."""

    __slots__ = (
        "cells",
        "drain_due",
        "inline_jsq",
        "listed",
        "rounds",
        "rounds_at_drain",
        "scan_checks",
        "servers",
        "touched",
        "where",
    )

    def __init__(
        self,
        servers: list[ServerState],
        cells: list[Cell],
        inline_jsq: bool,
        drain_due: Callable[[float, bool], None] | None,
        rounds: Callable[[], int],
        listed: list[float],
    ) -> None:
        """``inline_jsq``: join-shortest-queue inlined (else the cell's policy is called);
        ``drain_due(t, inclusive)``: drain every server with inbound blocks due and mark it
        (:func:`~edgespec.sim.fast.inbound.drain_all`; ``None`` where blocks never wait
        in inbound heaps); ``rounds()``: the rounds verified so far; ``listed``:
        :attr:`DueIndex.listed <edgespec.sim.model.inbound_queue.DueIndex.listed>` (per
        server, no later than its earliest inbound block)."""
        self.servers = servers
        self.listed = listed
        self.drain_due = drain_due
        self.rounds = rounds
        self.rounds_at_drain = 0
        self.scan_checks = 0  # tied servers checked one by one since the last full drain
        self.cells = cells
        self.inline_jsq = inline_jsq
        self.touched: set[ServerState] = set()
        # server_id -> (its cell's view, its position there)
        self.where: dict[int, tuple[LoadView, int]] = {}
        for cell in cells:
            for position, load in enumerate(cell.view):
                self.where[load.server_id] = (cell.view, position)
        missing = sorted({s.server_id for s in servers} - self.where.keys())
        if missing:
            raise ValueError(f"servers {missing} belong to no routing cell")

    def refresh(self) -> None:
        """Rewrite the loads of the servers marked since the last call."""
        where = self.where
        for s in self.touched:
            view, position = where[s.server_id]
            view.update(position, len(s.queue), s.num_active, s.busy)  # load_of's, unboxed
        self.touched.clear()

    def route(self, cell_index: int, t: float, inclusive: bool | None) -> ServerState:
        """The server a new session of ``cell_index`` goes to at ``t``, after
        :meth:`refresh`. ``inclusive``: ``None`` when every queue is exact; otherwise the
        queues lack the inbound blocks due before ``t`` (at ``t`` too if ``True``), which
        inlined join-shortest-queue drains where it needs them (module docstring) and a
        policy needs drained beforehand."""
        cell = self.cells[cell_index]
        view = cell.view
        if self.inline_jsq:  # JoinShortestQueueRouting.route on a view, inline
            if inclusive is not None:
                self._settle_least(view, t, inclusive)
            tied = view.least_loaded()
            chosen = tied[int(cell.rng.integers(len(tied)))] if len(tied) > 1 else tied[0]
            return self.servers[chosen.server_id]
        policy = cell.policy
        return self.servers[decide_route(policy, view, cell.rng)]

    def _settle_least(self, view: LoadView, t: float, inclusive: bool) -> None:
        """Drain the least-loaded servers until none has an inbound block due (each checked
        once: one with nothing due at ``t`` stays so), or, when that has cost more than a
        full drain would, every server with blocks due (module docstring)."""
        rounds = self.rounds()
        checks = self.scan_checks + view.num_least_loaded()
        if checks > SCAN_FLOOR + SCAN_PER_ROUND * (rounds - self.rounds_at_drain):
            assert self.drain_due is not None, "queues lag only where blocks wait inbound"
            self.drain_due(t, inclusive)
            self.rounds_at_drain = rounds
            self.scan_checks = 0
            self.refresh()
            return
        servers, where, listed = self.servers, self.where, self.listed
        settled: set[int] = set()  # nothing due at t
        checked = 0
        while True:
            drained = False
            for server_id in view.least_loaded_ids():
                if server_id in settled:
                    continue
                checked += 1
                earliest = listed[server_id]  # no later than its earliest block
                if earliest > t or (earliest == t and not inclusive):
                    settled.add(server_id)  # without reading the server
                    continue
                s = servers[server_id]
                inbound = s.inbound
                if inbound and (inbound[0][0] < t or (inclusive and inbound[0][0] == t)):
                    drain(s, t, inclusive)
                    view.update(where[server_id][1], len(s.queue), s.num_active, s.busy)
                    drained = True
                else:
                    settled.add(server_id)
            if not drained:
                break
        self.scan_checks += checked
