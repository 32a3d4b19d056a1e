"""Event handlers of the simulator: request arrival, drafting, uplink, batching,
verification, downlink. See :mod:`edgespec.sim.simulator` for the round lifecycle."""

from __future__ import annotations

from typing import ClassVar

from edgespec.core.types import Request
from edgespec.policies.contracts import check_window
from edgespec.policies.inputs import UNOBSERVED
from edgespec.policies.interfaces import BatchLimits, WindowDecision
from edgespec.sim import inbound
from edgespec.sim.acceptance import AcceptanceModel, TraceAcceptance
from edgespec.sim.arrivals import Arrivals
from edgespec.sim.batchend import distributed_batch_end
from edgespec.sim.build import Policies
from edgespec.sim.cells import Layout
from edgespec.sim.device_round import DraftTimes, uplink_s
from edgespec.sim.entities import DeviceState, ServerState, Session
from edgespec.sim.fastpath import dispatch_when_alone, fcfs_dispatch, memoised_accept_runs
from edgespec.sim.fused_run import FusedRuns
from edgespec.sim.kernel import EventQueue, Handler, RecordSink
from edgespec.sim.paths import choose_path
from edgespec.sim.routing import Router, build_cells
from edgespec.sim.scenario import Scenario
from edgespec.sim.server_events import batch_end_handler, dispatch_handler
from edgespec.sim.stop_model import StopModel
from edgespec.sim.workload import LengthTable, TraceEntry

BATCH_END, DELIVER, DRAFT_DONE, ARRIVE, REQUEST, DISPATCH = range(6)


class Simulation:
    """Holds the run's state; its bound methods are the kernel's event handlers.

    Both paths draw a block's uplink latency when its round begins and begin a session's
    next round when its batch ends (the device's own random stream, so the draws are
    the same; nothing the round reads changes in between): no DRAFT_DONE event, and a
    DELIVER event only for a finished request. ``every_hop`` (a test switch) makes the
    straightforward path schedule both hops as their own events instead, which must
    give identical results (tests/sim/test_policy_path.py).
    """

    every_hop: ClassVar[bool] = False

    def __init__(
        self,
        scenario: Scenario,
        devices: list[DeviceState],
        servers: list[ServerState],
        policies: Policies,
        acceptance: AcceptanceModel,
        lengths: LengthTable | None,
        trace: tuple[TraceEntry, ...],
        sink: RecordSink,
        *,
        record_rounds: bool,
        stop: StopModel | None = None,
        layout: Layout | None = None,
    ) -> None:
        self.scenario = scenario
        self.devices = devices
        self.servers = servers
        self.policies = policies
        self.window = policies.window
        self.acceptance = acceptance
        self.sink = sink
        self.record_rounds = record_rounds
        self.mode = scenario.mode
        self.centralized = scenario.mode == "centralized"
        self.distributed = scenario.mode == "distributed"
        self.fused_mode = scenario.mode == "fused"  # every round fused (fused_run.py)
        self.stop = stop
        # Token-tree traces replay their captured rounds (trace.draft_tree), by request id.
        self.trees = {e.request_id: (e.tree_rounds, e.tree_depth) for e in trace if e.tree_rounds}
        path = choose_path(
            scenario,
            devices,
            servers,
            policies,
            record_rounds=record_rounds,
            stop_cuts_blocks=stop is not None,
            replays_trees=bool(self.trees),
            every_hop=self.every_hop,
        )
        self.fast = path.fast
        self.static_gamma = path.static_gamma
        self.observes = path.observes
        self.fcfs_inline = path.fcfs_inline
        self.jsq_inline = path.jsq_inline
        self.hops = path.hops  # DRAFT_DONE and DELIVER as events
        self.lazy = path.lazy  # the specialised BATCH_END, no ARRIVE events
        self.fuses = path.fuses
        self.may_fuse = path.may_fuse
        self.path = path.description
        self.deadline_rule = scenario.deadline_rule
        self.fused_runs = FusedRuns(self, self.begin_round, (DRAFT_DONE, ARRIVE, DELIVER))
        self.send_probs = scenario.temperature > 0
        # Routing (sim/routing.py): handlers that change a server's queue length, active
        # sessions or busy flag mark it with ``touch``; blocks in flight are indexed by
        # their earliest arrival per server (inbound.DueIndex).
        if layout is None:  # unpinned: one cell
            layout = Layout.whole(len(devices), len(servers))
        self.device_slot = layout.device_slot
        self.slot_sessions = [0] * len(layout.cell_ids)  # which trace sequence, per cell
        self.due = inbound.DueIndex(len(servers))
        self.router = Router(
            servers,
            build_cells(servers, layout, policies.routing, scenario.seed),
            self.jsq_inline,
            lambda t, inclusive: inbound.drain_all(self, t, inclusive),
            lambda: self.num_rounds,
            self.due.listed,
        )
        self.touch = self.router.touched.add
        self.arrivals = Arrivals(scenario, devices, lengths, trace, self._offer, REQUEST, layout)
        self.trace_pool = acceptance if isinstance(acceptance, TraceAcceptance) else None
        self.limits = [
            (
                BatchLimits(s.max_batch_size, s.max_batch_tokens, s.kv_budget),
                BatchLimits(s.max_batch_size, s.max_batch_tokens, s.kv_budget, force=True),
            )
            for s in servers
        ]
        self.draft_times = DraftTimes()
        self.runs_memo: dict[int, tuple[tuple[int, ...], list[int]]] = {}
        self.num_rounds = 0
        self.num_sessions = 0
        self.q = EventQueue()

    def handlers(self) -> list[Handler]:
        """Handlers by event kind: these methods, the server's (server_events), or the
        batchend/inbound/fastpath closures."""
        dispatch = dispatch_handler(self, BATCH_END, ARRIVE)
        if self.fcfs_inline:
            dispatch = fcfs_dispatch(self, BATCH_END)
        inline = dispatch if self.fast else None  # the fast path dispatches at once
        batch_end = batch_end_handler(self, DELIVER, DISPATCH)
        arrive: Handler = self._arrive
        if self.lazy:
            batch_end = distributed_batch_end(self, inline, ARRIVE, DELIVER, DISPATCH)
            arrive = inbound.wake_handler(self, inline, ARRIVE, DISPATCH)
        elif self.fast:
            arrive = dispatch_when_alone(self, dispatch, DISPATCH)
        return [
            batch_end,
            self._deliver,
            self._draft_done,
            arrive,
            self.arrivals.on_request,
            dispatch,
        ]

    # --- arrivals (edgespec.sim.arrivals creates the requests)

    def start(self, queue: EventQueue) -> None:
        self.q = queue
        self.arrivals.start(queue)

    def _offer(
        self, dev: DeviceState, request: Request, seq: tuple[int, ...] | None, t: float
    ) -> None:
        if dev.session is None:
            self._start(dev, request, seq, t, True)
        else:
            dev.pending.append((request, seq))

    def _start(
        self,
        dev: DeviceState,
        request: Request,
        seq: tuple[int, ...] | None,
        t: float,
        after_arrive: bool,
    ) -> None:
        """Start a request (``after_arrive``: the calling event's kind runs after ARRIVE)."""
        index = self.num_sessions
        self.num_sessions += 1
        router = self.router
        lazy = self.lazy
        if lazy and not router.inline_jsq:  # the policy reads the queues: update them all
            inbound.drain_all(self, t, after_arrive)
        router.refresh()
        slot = self.device_slot[dev.device_id]
        server = router.route(slot, t, after_arrive if lazy else None)
        nth = self.slot_sessions[slot]  # the cell's session count (unpinned: the run's)
        self.slot_sessions[slot] = nth + 1
        if seq is None and self.trace_pool is not None:
            seq = self.trace_pool.seq_for(nth)
        slo = self.scenario.slo_classes[request.slo_class]
        session = Session(index, request, dev, server, seq, slo, self.observes, t)
        session.tree = self.trees.get(request.request_id)
        if self.lazy and seq and type(self.acceptance) is TraceAcceptance:
            session.runs = memoised_accept_runs(self.runs_memo, seq)
        dev.session = session
        server.num_active += 1
        self.touch(server)
        self.begin_round(session, t)

    # --- one round

    def begin_round(self, s: Session, t: float, decided: WindowDecision | None = None) -> None:
        """A round begins on the device (``decided``: the server's, as a fused run ended)."""
        request = s.request
        committed = s.committed
        rounds = s.num_rounds
        if self.centralized:
            gamma = 0
        else:
            chosen = self.static_gamma
            if chosen is None:
                decision = decided
                if decision is None:
                    history = s.history  # kept when the policy observes
                    obs = UNOBSERVED if history is None else history.observation(t)
                    decision = self.window.next_window(obs)
                    if type(decision) is not WindowDecision or decision.fused or self.fused_mode:
                        decision = check_window(self.window, decision)
                        if decision.fused or self.fused_mode:
                            self.fused_runs.start(s, t, decision)
                            return
                chosen = decision.gamma
            s.gamma = chosen
            cap = request.num_output_tokens - committed - 1
            gamma = chosen if chosen <= cap else cap
        sent = gamma
        tree = s.tree
        if tree is not None and gamma and rounds < len(tree[0]):
            sent = tree[0][rounds][0]  # the captured round: its nodes are verified
            gamma = tree[1] if sent else 0  # one draft pass per depth
        passes = gamma
        stop = self.stop
        if stop is not None:  # every round: a round with nothing to draft has 0 passes
            early = None
            if gamma and tree is None:
                cut = stop.block(
                    request.request_id, s.seq, committed, gamma, self.acceptance, s.device.rng
                )
                sent = gamma = cut.sent
                passes, early = cut.passes, cut.accepted
            s.passes, s.pre_accepted = passes, early
        s.sent = sent
        s.gamma_eff = gamma
        first = rounds == 0
        if self.centralized:
            draft = 0.0
        else:
            overhead_s = None if stop is None else stop.overhead_s
            draft = self.draft_times.round_s(s, passes, first, overhead_s)
        s.round_start_s = t
        s.round_draft_s = draft
        s.draft_s += draft
        if self.lazy:
            inbound.send(self, (t + draft) + self._uplink(s, first), s, ARRIVE)
        elif self.hops:
            self.q.push(t + draft, DRAFT_DONE, s.device.device_id, s)
        else:  # the uplink now: _draft_done's expression and draw
            self.q.push((t + draft) + self._uplink(s, first), ARRIVE, s.device.device_id, s)

    def _uplink(self, s: Session, first: bool) -> float:
        return uplink_s(s, first, self.distributed, self.send_probs)

    def _draft_done(self, t: float, s: Session) -> None:
        if s.fused:
            self.fused_runs.send(s, t)
            return
        self.q.push(t + self._uplink(s, s.num_rounds == 0), ARRIVE, s.device.device_id, s)

    def _arrive(self, t: float, s: Session) -> None:
        server = s.server
        s.enqueued_s = t
        s.entry_id = server.num_enqueued
        server.num_enqueued += 1
        server.queue.append(s)
        self.touch(server)
        if not server.busy and not server.dispatch_pending:
            server.dispatch_pending = True
            self.q.push(t, DISPATCH, server.server_id, server)

    # --- the device

    def _deliver(self, t: float, s: Session) -> None:
        request = s.request
        if s.committed < request.num_output_tokens:
            decided, s.resume = s.resume, None  # set when a fused run ended (every_hop)
            self.begin_round(s, t, decided)
            return
        self.sink.request(s.record(t))
        dev = s.device
        dev.session = None
        if dev.pending:
            nxt_request, seq = dev.pending.popleft()
            self._start(dev, nxt_request, seq, t, False)
        else:
            self.arrivals.device_idle(dev, t)
