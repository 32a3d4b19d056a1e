"""The specialised handler sets: the reference round with some steps replaced by cheaper
equivalents (:mod:`edgespec.sim.handler_sets` chooses one per run).

* ``inlined`` (:class:`InlinedLoop`): the reference's events, with the policies whose
  exact types it knows inlined: the static window's γ, FCFS batching
  (:func:`~edgespec.sim.fast.dispatch.fcfs_dispatch`) and join-shortest-queue routing
  (:class:`~edgespec.sim.model.router.Router`); a DISPATCH runs at once when no other
  event shares its time.
* ``inbound`` (:class:`InboundLoop`): distributed runs of plain-chain blocks
  (:mod:`edgespec.sim.blocks.chain`) without round records; no ARRIVE event per round
  (blocks wait in their server's inbound heap, :mod:`edgespec.sim.fast.inbound`) and
  closures for BATCH_END and the next round's start (:mod:`edgespec.sim.fast.batch_end`);
  every policy is called.
* ``fast`` (:class:`FastLoop`): ``inbound`` with the policies inlined as in ``inlined``
  and a DISPATCH run at once when no other event shares its time.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgespec.policies.batching import FcfsBatching
from edgespec.policies.interfaces import WindowDecision
from edgespec.policies.routing import JoinShortestQueueRouting
from edgespec.policies.window import StaticWindow
from edgespec.sim.fast import inbound
from edgespec.sim.fast.batch_end import distributed_batch_end
from edgespec.sim.fast.dispatch import (
    dispatch_when_alone,
    fcfs_dispatch,
    memoised_accept_runs,
)
from edgespec.sim.fast.window import distributed_only
from edgespec.sim.kernel import Handler
from edgespec.sim.loop.server import ReferenceLoop
from edgespec.sim.model.acceptance import TraceAcceptance
from edgespec.sim.model.entities import ServerState, Session
from edgespec.sim.model.inbound_queue import drain
from edgespec.sim.model.router import Router
from edgespec.sim.state import SimState


@dataclass(frozen=True, slots=True)
class PolicyInlines:
    """Which policies a set inlines: the static window's γ (``None``: asked), FCFS, JSQ."""

    static_gamma: int | None = None
    fcfs: bool = False
    jsq: bool = False


NO_INLINES = PolicyInlines()


def policy_inlines(state: SimState) -> PolicyInlines:
    """What can be inlined for this run's policies: only their exact classes."""
    policies, window = state.policies, state.window
    static = window.gamma if type(window) is StaticWindow and state.fuses is False else None
    return PolicyInlines(
        static,
        type(policies.batching) is FcfsBatching,
        type(policies.routing) is JoinShortestQueueRouting,
    )


class InlinedLoop(ReferenceLoop):
    """The ``inlined`` set (module docstring)."""

    name = "inlined"
    inline_policies = True

    def __init__(self, state: SimState) -> None:
        self.inlines = policy_inlines(state) if self.inline_policies else NO_INLINES
        super().__init__(state)
        static = self.inlines.static_gamma
        self.static_decision = None if static is None else WindowDecision(static)
        if static is not None:
            self.observes = False  # the policy is not asked: no history to keep

    def make_router(self) -> Router:
        state = self.state
        return self.router_over(
            self.inlines.jsq,
            lambda t, inclusive: inbound.drain_all(state, self.touch, t, inclusive),
        )

    def decide(self, s: Session, t: float) -> WindowDecision:
        if self.static_decision is not None:
            return self.static_decision
        return super().decide(s, t)

    def dispatcher(self, lazy: bool) -> Handler:
        """The DISPATCH handler: FCFS inlined when the policy is exactly FCFS."""
        if self.inlines.fcfs:
            fused = self.state.may_fuse and not lazy  # the inbound sets run no fused rounds
            fused_step = self.fused_runs.draft_step_s if fused else None
            return fcfs_dispatch(self.state, self.touch, lazy, fused_step)
        return self.dispatch

    def handlers(self) -> list[Handler]:
        dispatch = self.dispatcher(False)
        arrive = dispatch_when_alone(self.state, self.touch, dispatch)
        return [
            self.batch_end,
            self.deliver,
            self.draft_done,
            arrive,
            self.arrivals.on_request,
            dispatch,
        ]


class InboundLoop(InlinedLoop):
    """The ``inbound`` set (module docstring): every policy called."""

    name = "inbound"
    inline_policies = False
    dispatch_at_once = False

    def route_session(self, slot: int, t: float, after_arrive: bool) -> ServerState:
        """Routing reads the queues: the blocks due by ``t`` join them first (inlined JSQ
        drains only the least-loaded servers, :meth:`Router.route`)."""
        router = self.router
        if not router.inline_jsq:
            inbound.drain_all(self.state, self.touch, t, after_arrive)
        router.refresh()
        return router.route(slot, t, after_arrive)

    def open_session(self, s: Session) -> None:
        state = self.state
        if s.seq and type(state.acceptance) is TraceAcceptance:
            s.runs = memoised_accept_runs(state.runs_memo, s.seq)

    def decide(self, s: Session, t: float) -> WindowDecision:
        return distributed_only(self.window, super().decide(s, t))

    def send_block(self, s: Session, ready_s: float) -> None:
        state = self.state
        up = s.block.uplink_s(s, s.num_rounds == 0, state.draft_rows)
        inbound.send(state, ready_s + up, s)

    def dispatch(self, t: float, server: ServerState) -> None:
        """The reference DISPATCH after the blocks due by ``t`` join the queue; a server
        left idle with a queue (the policy chose nothing) waits for the next block."""
        drain(server, t)
        super().dispatch(t, server)
        if not server.busy and server.queue:
            inbound.arm(self.state, server)

    def handlers(self) -> list[Handler]:
        dispatch = self.dispatcher(True)
        at_once = dispatch if self.dispatch_at_once else None
        state, touch = self.state, self.touch
        return [
            distributed_batch_end(state, touch, self.observes, self.inlines.static_gamma, at_once),
            self.deliver,
            self.draft_done,
            inbound.wake_handler(state, touch, at_once),
            self.arrivals.on_request,
            dispatch,
        ]


class FastLoop(InboundLoop):
    """The ``fast`` set (module docstring)."""

    name = "fast"
    inline_policies = True
    dispatch_at_once = True
