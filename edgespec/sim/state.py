"""The run's data: what every handler set reads and changes, and nothing that acts.

A :class:`SimState` is built once per run from the built parts (entities, policies,
models, sink) and handed to the handler set that runs it
(:mod:`edgespec.sim.handler_sets`); the handler sets are behaviour over this state.
"""

from __future__ import annotations

from edgespec.core.link_delay import DraftRows
from edgespec.policies.fusing import fusing
from edgespec.policies.interfaces import BatchLimits
from edgespec.sim.kernel import EventQueue, RecordSink
from edgespec.sim.model.acceptance import AcceptanceModel, TraceAcceptance
from edgespec.sim.model.device_round import DraftTimes
from edgespec.sim.model.entities import DeviceState, ServerState, Tree
from edgespec.sim.model.inbound_queue import DueIndex
from edgespec.sim.model.layout import Layout
from edgespec.sim.model.stop_model import StopModel
from edgespec.sim.setup.build import Policies
from edgespec.sim.setup.lengths import LengthTable
from edgespec.sim.setup.scenario import Scenario
from edgespec.sim.setup.workload import TraceEntry


class SimState:
    """Everything one run holds: the scenario and its facts, the entities, the policies and
    models, the record sink, the event queue and the run's counters."""

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
        self.trace_pool = acceptance if isinstance(acceptance, TraceAcceptance) else None
        self.lengths = lengths
        self.trace = trace
        self.sink = sink
        self.record_rounds = record_rounds
        self.stop = stop
        self.layout = layout if layout is not None else Layout.whole(len(devices), len(servers))
        self._set_modes(scenario, policies)
        # Token-tree traces replay their captured rounds, by request id.
        self.trees: dict[str, Tree] = {e.request_id: e.tree_rounds for e in trace if e.tree_rounds}
        self.limits = [
            (
                BatchLimits(s.max_batch_size, s.max_batch_tokens, s.kv_budget),
                BatchLimits(s.max_batch_size, s.max_batch_tokens, s.kv_budget, force=True),
            )
            for s in servers
        ]
        self.device_slot = self.layout.device_slot
        self.slot_sessions = [0] * len(self.layout.cell_ids)  # which trace sequence, per cell
        self.due = DueIndex(len(servers))  # blocks in flight (inbound handler sets)
        compat = scenario.dsdsim_compat
        self.draft_times = DraftTimes(compat is not None and compat.one_pass_drafting)
        self.runs_memo: dict[int, tuple[tuple[int, ...], list[int]]] = {}
        self.num_rounds = 0
        self.num_committed_tokens = 0  # Σ committed over every verdict, in every handler set
        self.num_sessions = 0
        self.q = EventQueue()

    def _set_modes(self, scenario: Scenario, policies: Policies) -> None:
        """The run's modes, read once from the scenario and the window policy."""
        self.mode = scenario.mode
        self.centralized = scenario.mode == "centralized"
        self.distributed = scenario.mode == "distributed"
        self.fused_mode = scenario.mode == "fused"  # every round fused (loop/fused.py)
        self.cloud_only = scenario.fused_rounds == "cloud_only"  # a fused round: one token
        self.cloud_only_draft_pass = scenario.cloud_only_draft_pass
        compat = scenario.dsdsim_compat  # DSD-Sim's simplifications (reference set only)
        self.fixed_rounds = compat is not None and compat.fixed_rounds
        self.bonus = 0 if self.fixed_rounds else 1  # a verified round's extra target token
        self.unqueued_fused = compat is not None and compat.unqueued_fused
        self.fuses = fusing(policies.window, scenario.mode)  # None: a policy of unknown type
        self.may_fuse = self.fuses is not False  # servers add fused entries' draft passes
        self.deadline_rule = scenario.deadline_rule
        sampled = scenario.temperature > 0  # stochastic verification: q rows uplinked
        entries = self.trace_pool.mean_row_entries if self.trace_pool is not None else 0.0
        rows = DraftRows(scenario.draft_probs, scenario.top_k, entries)
        self.draft_rows = rows if sampled else None
