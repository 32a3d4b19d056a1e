"""Event handlers of the simulator: request arrival, drafting, uplink, batching,
verification, downlink. See :mod:`edgespec.sim.simulator` for the round lifecycle."""

from __future__ import annotations

from typing import ClassVar

from edgespec.core.types import Request
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.contracts import check_window
from edgespec.policies.inputs import UNOBSERVED, observes
from edgespec.policies.interfaces import BatchLimits, WindowDecision
from edgespec.policies.routing import JoinShortestQueueRouting
from edgespec.policies.window import StaticWindow
from edgespec.sim import inbound
from edgespec.sim.acceptance import AcceptanceModel, TraceAcceptance
from edgespec.sim.arrivals import Arrivals
from edgespec.sim.batchend import distributed_batch_end
from edgespec.sim.build import Policies
from edgespec.sim.cells import Layout
from edgespec.sim.cost_models import decode_steps_s, draft_passes_s
from edgespec.sim.entities import DeviceState, ServerState, Session
from edgespec.sim.fastpath import (
    describe_path,
    dispatch_when_alone,
    fast_path_blockers,
    fcfs_dispatch,
    memoised_accept_runs,
)
from edgespec.sim.fused_run import FusedRuns, fusing
from edgespec.sim.kernel import EventQueue, Handler, RecordSink
from edgespec.sim.network import uplink_bytes
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
        fuses = fusing(policies.window, scenario.mode)  # None: a policy of unknown type
        blockers = fast_path_blockers(devices, servers)
        self.stop = stop
        if stop is not None:  # neither the fast path nor batchend.py cuts blocks short
            blockers.append("a stop predictor cuts blocks short")
        fast = scenario.fast_path and not blockers
        window = policies.window
        self.static_gamma = (
            window.gamma if fast and type(window) is StaticWindow and fuses is False else None
        )
        self.observes = self.static_gamma is None and observes(window)  # else UNOBSERVED
        self.fcfs_inline = fast and type(policies.batching) is FcfsBatching
        self.jsq_inline = fast and type(policies.routing) is JoinShortestQueueRouting
        self.fast = fast
        self.hops = self.every_hop and not fast  # DRAFT_DONE and DELIVER as events
        # Token-tree traces replay their captured rounds (trace.draft_tree), by request id.
        self.trees = {e.request_id: (e.tree_rounds, e.tree_depth) for e in trace if e.tree_rounds}
        # The specialised BATCH_END (batchend.py; chains only) and no ARRIVE events (inbound.py).
        self.deadline_rule = scenario.deadline_rule
        self.lazy = (
            not blockers
            and self.distributed
            and fuses is not True  # an unknown policy's fused answer is refused there
            and not record_rounds
            and not self.trees
            and not self.hops
        )
        self.fuses = fuses
        self.may_fuse = fuses is not False and not self.lazy
        self.path = describe_path(self, scenario.fast_path, blockers)
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
        # decode_steps_s is a pure function of these keys: memoized, values identical.
        self.draft_times: dict[tuple[int, int, int, int], float] = {}
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
            cost = s.device.draft_cost
            prompt = request.num_prompt_tokens
            unseen = s.catch_up  # > 0 after a fused run: what it committed (fused_run.py)
            if unseen:
                s.catch_up = 0
                draft = draft_passes_s(cost, ((prompt + committed, unseen, passes),))
            else:
                key = (id(cost), passes, prompt + committed, prompt if first else 0)
                cached_draft = self.draft_times.get(key)
                if cached_draft is None:
                    cached_draft = decode_steps_s(cost, passes, key[2], key[3])
                    self.draft_times[key] = cached_draft
                draft = cached_draft
            if stop is not None:
                draft += passes * stop.overhead_s
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
        dev = s.device
        if self.distributed:
            prompt_ids = s.request.num_prompt_tokens if first else 0
            size = uplink_bytes(
                s.sent, prompt_ids, dev.vocab_size, self.send_probs, 0, s.tree is not None
            )
        elif first:
            size = uplink_bytes(0, s.request.num_prompt_tokens, dev.vocab_size, False)
        else:
            s.round_up_s = 0.0
            return 0.0
        up = dev.link.latency_s(size, dev.rng)
        s.round_up_s = up
        s.network_s += up
        return up

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
