"""Blocks in flight without ARRIVE events (sim/fast/inbound.py) by hand: send, the
DueIndex, drain_all and the WAKE event, each checked on its own (the handler-set contract
test compares whole runs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import inf
from types import SimpleNamespace
from typing import Any, cast

import pytest

from edgespec.hardware.cost_models import WispCost
from edgespec.policies.estimator import WispCoefficients
from edgespec.sim.events import ARRIVE, DISPATCH, REQUEST
from edgespec.sim.fast import inbound
from edgespec.sim.kernel import EventQueue, Handler, priority
from edgespec.sim.model.entities import DeviceState, ServerState, Session
from edgespec.sim.model.inbound_queue import DueIndex, drain
from edgespec.sim.state import SimState


@dataclass
class _Engine:
    """What fast/inbound.py reads of a SimState: its queue, servers, due index and touch."""

    servers: list[ServerState]
    due: DueIndex
    q: EventQueue = field(default_factory=EventQueue)
    touched: list[int] = field(default_factory=list)
    handlers: list[Handler] = field(default_factory=list)  # for _run

    def touch(self, server: ServerState) -> None:
        self.touched.append(server.server_id)


def _engine(num_servers: int) -> tuple[_Engine, SimState]:
    cost = WispCost(WispCoefficients(1e-4, 0.0, 0.0, 0.01))
    servers = [ServerState(i, cost, None, 10**6, 8, 10**6) for i in range(num_servers)]
    engine = _Engine(servers, DueIndex(num_servers))
    return engine, cast(SimState, engine)


def _block(server: ServerState, device_id: int) -> Session:
    s = object.__new__(Session)
    s.server = server
    s.device = cast(DeviceState, SimpleNamespace(device_id=device_id))
    return s


def _send(sim: SimState, arrival_s: float, s: Session) -> None:
    inbound.send(sim, arrival_s, s)


def test_send_lists_the_block_and_arms_one_wake_per_earlier_block() -> None:
    engine, sim = _engine(1)
    server = engine.servers[0]
    b5, b3, b8 = _block(server, 5), _block(server, 3), _block(server, 8)
    _send(sim, 2.0, b5)
    assert [(t, p) for t, p, _, _ in engine.q.heap] == [(2.0, priority(ARRIVE, 5))]
    assert (server.wake_s, engine.due.listed, engine.due.heap) == (2.0, [2.0], [(2.0, 0)])
    _send(sim, 2.0, b3)  # no earlier: the WAKE at 2.0 stands, nothing more listed
    assert len(engine.q) == 1 and engine.due.heap == [(2.0, 0)]
    _send(sim, 1.0, b8)  # earlier: a WAKE for it too (the one at 2.0 will find it stale)
    assert sorted((t, p) for t, p, _, _ in engine.q.heap) == [
        (1.0, priority(ARRIVE, 8)),
        (2.0, priority(ARRIVE, 5)),
    ]
    assert server.wake_s == 1.0 and engine.due.listed == [1.0]
    drain(server, 2.0)
    assert server.queue == [b8, b3, b5]  # time, then device: the ARRIVE events' order
    assert [(s.enqueued_s, s.entry_id) for s in server.queue] == [(1.0, 0), (2.0, 1), (2.0, 2)]


@pytest.mark.parametrize(("busy", "pending"), [(True, False), (False, True)])
def test_send_arms_no_wake_for_a_busy_server_or_one_about_to_dispatch(
    busy: bool, pending: bool
) -> None:
    engine, sim = _engine(1)
    server = engine.servers[0]
    server.busy, server.dispatch_pending = busy, pending
    _send(sim, 2.0, _block(server, 1))
    assert len(engine.q) == 0 and server.wake_s == inf
    assert [a for a, _, _ in server.inbound] == [2.0] and engine.due.listed == [2.0]


def test_drain_all_moves_due_blocks_and_relists_each_server_at_its_next_block() -> None:
    engine, sim = _engine(4)
    s0, s1, s2, s3 = engine.servers
    blocks = {
        "a": (s0, 1.0, 0),
        "b": (s0, 2.0, 1),
        "c": (s0, 3.0, 2),
        "d": (s1, 2.0, 3),
        "e": (s2, 5.0, 4),
    }
    made = {name: _block(server, dev) for name, (server, _, dev) in blocks.items()}
    for name, (_, arrival_s, _) in blocks.items():
        _send(sim, arrival_s, made[name])

    def queues() -> list[list[str]]:
        names = {id(s): n for n, s in made.items()}
        return [[names[id(s)] for s in server.queue] for server in engine.servers]

    inbound.drain_all(
        sim, engine.touch, 2.0, False
    )  # e.g. routing at a DELIVER: ARRIVEs at 2.0 not run
    assert queues() == [["a"], [], [], []]
    assert engine.touched == [0] and engine.due.listed == [2.0, 2.0, 5.0, inf]
    inbound.drain_all(sim, engine.touch, 2.0, True)  # at a REQUEST: they have run
    assert queues() == [["a", "b"], ["d"], [], []]
    assert sorted(engine.touched) == [0, 0, 1] and engine.due.listed == [3.0, inf, 5.0, inf]
    _send(sim, 4.0, late := _block(s1, 6))  # relisted after it emptied
    _send(sim, 4.5, _block(s2, 7))  # no earlier than s2's listing: nothing new listed
    _send(sim, 4.0, early := _block(s2, 8))  # earlier: the 5.0 entry goes stale
    made |= {"late": late, "early": early}
    engine.touched.clear()
    inbound.drain_all(sim, engine.touch, 4.25, True)
    assert queues() == [["a", "b", "c"], ["d", "late"], ["early"], []]
    assert sorted(engine.touched) == [0, 1, 2] and engine.due.listed == [inf, inf, 4.5, inf]
    assert [(s.enqueued_s, s.entry_id) for s in s0.queue + s1.queue] == [
        (1.0, 0),
        (2.0, 1),
        (3.0, 2),
        (2.0, 0),
        (4.0, 1),
    ]
    assert s3.queue == [] and s2.inbound[0][0] == 4.5


def _wake_run(
    dispatch_inline: bool,
) -> tuple[_Engine, SimState, list[tuple[str, float, Any]]]:
    """One idle server, its WAKE handler and a log of dispatches: ``inline`` (the fast
    path calling its dispatch at once) or ``event`` (a DISPATCH event ran)."""
    engine, sim = _engine(2)
    log: list[tuple[str, float, Any]] = []

    def dispatch(t: float, server: ServerState) -> None:
        log.append(("inline", t, [s.device.device_id for s in server.queue]))

    def dispatch_event(t: float, server: ServerState) -> None:
        log.append(("event", t, (server.server_id, server.dispatch_pending)))
        server.dispatch_pending = False

    wake = inbound.wake_handler(sim, engine.touch, dispatch if dispatch_inline else None)
    wakes = [0]

    def guarded_wake(t: float, server: ServerState) -> None:
        wakes[0] += 1
        assert wakes[0] < 100, "a WAKE keeps re-arming itself"
        wake(t, server)

    handlers: list[Handler] = [lambda t, p: log.append(("other", t, p))] * 6
    handlers[ARRIVE], handlers[DISPATCH] = guarded_wake, dispatch_event
    engine.handlers = handlers
    return engine, sim, log


def _run(engine: _Engine, until_s: float) -> None:
    engine.q.run(engine.handlers, until_s)


def test_a_wake_alone_drains_its_block_and_dispatches_at_once() -> None:
    engine, sim, log = _wake_run(True)
    server = engine.servers[0]
    _send(sim, 1.0, _block(server, 2))
    _run(engine, 1.0)
    assert log == [("inline", 1.0, [2])]
    assert server.wake_s == inf and engine.touched == [0] and server.inbound == []
    _send(sim, 2.0, _block(server, 4))  # idle again: the next block gets its WAKE
    assert [(t, p) for t, p, _, _ in engine.q.heap] == [(2.0, priority(ARRIVE, 4))]


@pytest.mark.parametrize("other", ["round event", "arrival"])
def test_a_wake_sharing_its_time_schedules_a_dispatch_event(other: str) -> None:
    """Another event at the WAKE's time (in either heap) runs before the DISPATCH would:
    a DISPATCH event then, as the straightforward path's ARRIVE schedules."""
    engine, sim, log = _wake_run(True)
    push = engine.q.push if other == "round event" else engine.q.push_arrival
    push(1.0, REQUEST, 0, "other")
    _send(sim, 1.0, _block(engine.servers[0], 9))
    _run(engine, 1.0)
    assert log == [("other", 1.0, "other"), ("event", 1.0, (0, True))]
    assert len(engine.servers[0].queue) == 1


def test_without_an_inline_dispatch_every_wake_schedules_one_in_server_order() -> None:
    engine, sim, log = _wake_run(False)
    s0, s1 = engine.servers
    _send(sim, 1.0, _block(s1, 1))
    _send(sim, 1.0, _block(s0, 9))
    _run(engine, 1.0)
    assert log == [("event", 1.0, (0, True)), ("event", 1.0, (1, True))]
    assert [len(s.queue) for s in engine.servers] == [1, 1]


@pytest.mark.parametrize(("busy", "pending"), [(True, False), (False, True)])
def test_a_wake_leaves_a_busy_or_dispatching_server_alone(busy: bool, pending: bool) -> None:
    engine, sim, log = _wake_run(True)
    server = engine.servers[0]
    _send(sim, 1.0, _block(server, 2))
    server.busy, server.dispatch_pending = busy, pending
    _run(engine, 1.0)
    assert log == [] and server.queue == [] and len(server.inbound) == 1
    assert server.wake_s == inf and len(engine.q) == 0


def test_a_stale_wake_rearms_for_the_next_block_without_dispatching() -> None:
    engine, sim, log = _wake_run(True)
    server = engine.servers[0]
    _send(sim, 1.0, _block(server, 2))
    _send(sim, 3.0, _block(server, 6))
    drain(server, 1.0)  # a dispatch took the 1.0 block before its WAKE ran
    server.queue.clear()
    _run(engine, 1.0)
    assert log == [] and server.wake_s == 3.0
    assert [(t, p) for t, p, _, _ in engine.q.heap] == [(3.0, priority(ARRIVE, 6))]
    _run(engine, 3.0)
    assert log == [("inline", 3.0, [6])]
