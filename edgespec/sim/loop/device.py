"""The reference round, device side: a request starts, a round begins (window decision,
draft, uplink), its block arrives in the server's queue, and its tokens are delivered.

:class:`DeviceLoop` is the device half of :class:`~edgespec.sim.loop.server.ReferenceLoop`.
Its methods are the reference handlers. Five of them are the points where a specialised
handler set (:mod:`edgespec.sim.handler_sets`) replaces one step of the round with an
equivalent that is cheaper to run: :meth:`make_router`, :meth:`route_session`,
:meth:`open_session`, :meth:`decide`, :meth:`send_block` and :meth:`resume_round`.
"""

from __future__ import annotations

from collections.abc import Callable

from edgespec.core.types import Request
from edgespec.policies.contracts import decide_window
from edgespec.policies.inputs import UNOBSERVED, observes
from edgespec.policies.interfaces import WindowDecision
from edgespec.sim.blocks.choice import SessionBlocks
from edgespec.sim.events import ARRIVE, DISPATCH, REQUEST
from edgespec.sim.loop.arrivals import Arrivals
from edgespec.sim.loop.fused import FusedRuns
from edgespec.sim.model.entities import DeviceState, ServerState, Session
from edgespec.sim.model.router import Router, build_cells
from edgespec.sim.state import SimState


def session_blocks(state: SimState) -> SessionBlocks:
    """The run's block models (:mod:`edgespec.sim.blocks`), from its mode, trace, stop
    predictor and devices."""
    return SessionBlocks(
        state.acceptance,
        state.draft_times,
        centralized=state.centralized,
        trees=bool(state.trees),
        stop=state.stop,
        semantic=any(d.semantic is not None for d in state.devices),
        fixed_rounds=state.fixed_rounds,
    )


class DeviceLoop:
    """The device side of the reference round over ``state`` (module docstring)."""

    name = "reference"

    def __init__(self, state: SimState) -> None:
        self.state = state
        self.q = state.q
        self.window = state.window
        self.observes = observes(state.window)  # else the policy gets UNOBSERVED
        self.router = self.make_router()
        self.touch = self.router.touched.add
        self.arrivals = Arrivals(
            state.scenario,
            state.devices,
            state.lengths,
            state.trace,
            self.offer,
            REQUEST,
            state.layout,
        )
        self.fused_runs = FusedRuns(self)
        self.blocks = session_blocks(state)

    def make_router(self) -> Router:
        """The router: every routing policy called with its cell's loads."""
        return self.router_over(False, None)

    def router_over(
        self, inline_jsq: bool, drain_due: Callable[[float, bool], None] | None
    ) -> Router:
        """A router over the run's cells (:class:`Router`'s arguments)."""
        state = self.state
        cells = build_cells(
            state.servers, state.layout, state.policies.routing, state.scenario.seed
        )
        return Router(
            state.servers, cells, inline_jsq, drain_due, lambda: state.num_rounds, state.due.listed
        )

    # --- a request

    def offer(
        self, dev: DeviceState, request: Request, seq: tuple[int, ...] | None, t: float
    ) -> None:
        """A request for ``dev`` at ``t``: it starts now, or after the device's current one."""
        if dev.session is None:
            self.start_request(dev, request, seq, t, True)
        else:
            dev.pending.append((request, seq))

    def start_request(
        self,
        dev: DeviceState,
        request: Request,
        seq: tuple[int, ...] | None,
        t: float,
        after_arrive: bool,
    ) -> None:
        """Route a new session and begin its first round (``after_arrive``: the calling
        event's kind runs after ARRIVE)."""
        state = self.state
        index = state.num_sessions
        state.num_sessions += 1
        slot = state.device_slot[dev.device_id]
        server = self.route_session(slot, t, after_arrive)
        nth = state.slot_sessions[slot]  # the cell's session count (unpinned: the run's)
        state.slot_sessions[slot] = nth + 1
        if seq is None and state.trace_pool is not None:
            seq = state.trace_pool.seq_for(nth, state.layout.cell_ids[slot])
        slo = state.scenario.slo_classes[request.slo_class]
        tree = state.trees.get(request.request_id)
        block = self.blocks.for_session(tree, dev)
        session = Session(index, request, dev, server, seq, slo, self.observes, t, block=block)
        session.tree = tree
        self.open_session(session)
        dev.session = session
        server.num_active += 1
        self.touch(server)
        self.begin_round(session, t)

    def route_session(self, slot: int, t: float, after_arrive: bool) -> ServerState:
        """The server a new session of cell ``slot`` goes to (the queues are exact here)."""
        self.router.refresh()
        return self.router.route(slot, t, None)

    def open_session(self, s: Session) -> None:
        """What a handler set prepares on a new session (the reference: nothing)."""

    # --- one round

    def decide(self, s: Session, t: float) -> WindowDecision:
        """The window policy's checked decision for the round ``s`` begins at ``t``."""
        history = s.history  # kept when the policy observes
        return decide_window(self.window, UNOBSERVED if history is None else history.observation(t))

    def begin_round(self, s: Session, t: float, decided: WindowDecision | None = None) -> None:
        """A round begins on the device (``decided``: the server's, as a fused run ended):
        the window policy's γ, capped to the output left, drafted by the session's block
        model (:mod:`edgespec.sim.blocks`), or a fused request."""
        block = s.block
        gamma = 0
        if block.drafts:
            state = self.state
            decision = self.decide(s, t) if decided is None else decided
            if decision.fused or state.fused_mode:
                self.fused_runs.start(s, t, decision)
                return
            chosen = s.gamma = decision.gamma
            cap = s.request.num_output_tokens - s.committed - state.bonus
            gamma = chosen if chosen <= cap else cap
        draft = block.draft(s, gamma, s.num_rounds == 0)
        s.round_start_s = t
        s.round_draft_s = draft
        s.draft_s += draft
        self.send_block(s, t + draft)

    def send_block(self, s: Session, ready_s: float) -> None:
        """The round's block (a fused request: its header) leaves the device at
        ``ready_s``; it arrives after the uplink."""
        if s.fused:
            self.fused_runs.send(s, ready_s)
            return
        up = s.block.uplink_s(s, s.num_rounds == 0, self.state.draft_rows)
        self.q.push(ready_s + up, ARRIVE, s.device.device_id, s)

    def resume_round(self, s: Session, t: float, decided: WindowDecision | None = None) -> None:
        """A continuing session's next round begins on its device at ``t`` (``decided``:
        the server's decision as a fused run ends): at once, as the DELIVER would."""
        self.begin_round(s, t, decided)

    def arrive(self, t: float, s: Session) -> None:
        """ARRIVE: the block joins its server's queue; an idle server dispatches at ``t``
        (an unqueued fused round, ``dsdsim_compat``, runs alone instead)."""
        server = s.server
        if s.fused and self.state.unqueued_fused:
            self.fused_runs.run_alone(server, s, t)
            return
        s.enqueued_s = t
        s.entry_id = server.num_enqueued
        server.num_enqueued += 1
        server.queue.append(s)
        self.touch(server)
        if not server.busy and not server.dispatch_pending:
            server.dispatch_pending = True
            self.q.push(t, DISPATCH, server.server_id, server)

    def deliver(self, t: float, s: Session) -> None:
        """DELIVER: the request's last tokens reached the device (or, in the every-hop
        set, any round's): the next round begins, or the device takes its next request."""
        request = s.request
        if s.committed < request.num_output_tokens:
            decided, s.resume = s.resume, None  # set when a fused run ended (every-hop)
            self.begin_round(s, t, decided)
            return
        self.state.sink.request(s.record(t))
        dev = s.device
        dev.session = None
        if dev.pending:
            nxt_request, seq = dev.pending.popleft()
            self.start_request(dev, nxt_request, seq, t, False)
        else:
            self.arrivals.device_idle(dev, t)
