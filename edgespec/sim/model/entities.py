"""Mutable simulation entities: sessions (requests in flight), devices, servers.

These are private to the simulator (never cross a boundary); they use ``__slots__``
classes rather than frozen dataclasses because the event loop updates them millions
of times per run.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Protocol

from edgespec.core.types import PendingVerification, Request, RequestRecord
from edgespec.hardware.cost_models import CostModel
from edgespec.policies.inputs import WindowHistory
from edgespec.policies.interfaces import WindowDecision
from edgespec.sim.model.kv_store import KvStore
from edgespec.sim.model.network import DraftRows, Link
from edgespec.sim.model.rng import UniformStream
from edgespec.sim.model.semantic import DeviceSemantics

TreeRound = tuple[int, int, int]  # a captured tree round: (nodes sent, accepted, draft passes)
Tree = tuple[TreeRound, ...]


class Block(Protocol):
    """A session's block model, chosen when it opens (:mod:`edgespec.sim.blocks`): what a
    round drafts and sends, and how its verification is judged. ``kind`` names it;
    ``drafts``: its rounds ask the window policy for γ (a centralized round does not)."""

    kind: str
    drafts: bool

    def draft(self, s: Session, gamma: int, first: bool) -> float:
        """Draft the round of window ``gamma`` (already capped; ``first``: the session's
        first round): set ``s.sent``, ``s.gamma_eff`` (and a stop predictor's
        ``s.passes``, ``s.pre_accepted``); return the drafting time."""
        ...

    def uplink_s(self, s: Session, first: bool, draft_rows: DraftRows | None) -> float:
        """The drafted block's uplink latency, drawn from the device's stream and added to
        ``s.round_up_s`` and ``s.network_s``."""
        ...

    def judge(self, s: Session) -> tuple[int, int, int]:
        """The verification of the round (a fused round's too): (tokens accepted, tokens
        committed, extra hops' size: 0 when the verdict needs no second hop)."""
        ...

    def extra_hops_s(self, s: Session, size: int) -> float:
        """The extra hops' time before the verdict goes down (``size``: :meth:`judge`'s)."""
        ...


class Session:
    """One request being served: its progress and per-round scratch values."""

    __slots__ = (
        "block",
        "catch_up",
        "committed",
        "device",
        "device_seen",
        "draft_s",
        "enqueued_s",
        "entry_id",
        "first_token_s",
        "fused",
        "fused_deliver_s",
        "fused_unseen",
        "gamma",
        "gamma_eff",
        "history",
        "index",
        "last_network_s",
        "network_s",
        "num_accepted",
        "num_drafted",
        "num_positions",
        "num_rounds",
        "parts_s",
        "passes",
        "pending",
        "pre_accepted",
        "queue_s",
        "request",
        "resume",
        "round_draft_s",
        "round_start_s",
        "round_up_s",
        "runs",
        "sent",
        "seq",
        "server",
        "server_seen",
        "slo_tokens_per_s",
        "start_s",
        "tree",
        "verify_s",
    )

    def __init__(
        self,
        index: int,
        request: Request,
        device: DeviceState,
        server: ServerState,
        seq: tuple[int, ...] | None,
        slo_tokens_per_s: float | None,
        observed: bool = True,
        start_s: float | None = None,
        *,
        block: Block,
    ) -> None:
        self.index = index
        self.request = request
        # When the device took the request up (later than its arrival when it was busy).
        self.start_s = request.arrival_s if start_s is None else start_s
        self.device = device
        self.server = server
        self.seq = seq
        self.runs: list[int] | None = None  # inbound sets: accept_runs(seq) for trace replay
        self.slo_tokens_per_s = slo_tokens_per_s
        self.committed = 0
        self.gamma = 0
        self.gamma_eff = 0  # draft positions this round (a token tree: its depth)
        self.sent = 0  # tokens sent and verified this round (a token tree: its nodes)
        self.tree: Tree | None = None  # a token-tree request's captured rounds
        self.block = block  # chosen as the session opens (edgespec.sim.blocks)
        self.passes: int | None = None  # a stop predictor's draft passes this round
        self.pre_accepted: int | None = None  # accepted, when drawn at drafting (stop_model)
        # What window policies see, one draft–target pair per device and server; kept only
        # when the run's window policy observes (``observed``), else ``None``.
        self.history: WindowHistory | None = (
            WindowHistory(f"{device.device_id}>{server.server_id}") if observed else None
        )
        self.num_rounds = self.num_drafted = self.num_accepted = 0
        self.num_positions = 0  # draft positions verified so far (a token tree: its depth)
        self.last_network_s = 0.0  # the previous round's uplink + downlink (0 before)
        self.draft_s = self.network_s = self.queue_s = self.verify_s = 0.0
        self.first_token_s = -1.0
        self.enqueued_s = self.round_start_s = self.round_draft_s = self.round_up_s = 0.0
        self.parts_s = 0.0  # the queued block's prefill parts' passes so far (verify time)
        self.entry_id = 0
        # What the batching policy sees of the queued block (edgespec.sim.loop.batch_choice).
        self.pending: PendingVerification | None = None
        # Fused rounds (edgespec.sim.loop.fused): this round runs fused; context tokens the
        # server's co-located draft has not processed (this round) and has processed
        # (after the last fused round); the device's draft: context processed when the
        # fused run began, tokens to catch up on in its next round, and the decision its
        # next round runs with (taken by the server when the fused run ended); when the
        # last fused round's tokens reach the device.
        self.fused = False
        self.fused_deliver_s = 0.0
        self.fused_unseen = self.server_seen = self.device_seen = self.catch_up = 0
        self.resume: WindowDecision | None = None

    def record(self, finish_s: float) -> RequestRecord:
        """The finished request's record."""
        request = self.request
        return RequestRecord(
            request_id=request.request_id,
            client_id=request.client_id,
            slo_class=request.slo_class,
            server_id=self.server.server_id,
            arrival_s=request.arrival_s,
            first_token_s=self.first_token_s,
            finish_s=finish_s,
            num_prompt_tokens=request.num_prompt_tokens,
            num_output_tokens=self.committed,
            num_rounds=self.num_rounds,
            num_drafted=self.num_drafted,
            num_accepted=self.num_accepted,
            slo_tokens_per_s=self.slo_tokens_per_s,
            draft_s=self.draft_s,
            network_s=self.network_s,
            queue_s=self.queue_s,
            verify_s=self.verify_s,
            device_wait_s=self.start_s - request.arrival_s,
        )


class DeviceState:
    """An edge device: serves its requests one at a time, in arrival order."""

    __slots__ = (
        "device_id",
        "draft_cost",
        "link",
        "pending",
        "rng",
        "semantic",
        "session",
        "slo_class",
        "vocab_size",
    )

    def __init__(
        self,
        device_id: int,
        slo_class: str,
        link: Link,
        draft_cost: CostModel,
        vocab_size: int,
        rng: UniformStream,
    ) -> None:
        self.device_id = device_id
        self.slo_class = slo_class
        self.link = link
        self.draft_cost = draft_cost
        self.vocab_size = vocab_size
        self.rng = rng
        self.session: Session | None = None
        self.pending: deque[tuple[Request, tuple[int, ...] | None]] = deque()
        # Semantic verification on this device (edgespec.sim.model.semantic); None: exact.
        self.semantic: DeviceSemantics | None = None


class ServerState(KvStore):
    """A target server: verification queue, engine, per-session KV cache (LRU:
    :class:`KvStore`)."""

    __slots__ = (
        "batch",
        "batch_cached",
        "batch_draft_s",
        "batch_new",
        "batch_start_s",
        "busy",
        "cost",
        "dispatch_pending",
        "draft_cost",
        "inbound",
        "max_batch_size",
        "max_batch_tokens",
        "num_active",
        "num_enqueued",
        "padded",
        "part_tokens",
        "queue",
        "server_id",
        "wake_s",
    )

    def __init__(
        self,
        server_id: int,
        cost: CostModel,
        draft_cost: CostModel | None,
        kv_budget: int,
        max_batch_size: int,
        max_batch_tokens: int,
        prefix_cache: bool = True,
        padded: bool = False,
        part_tokens: int | None = None,
    ) -> None:
        super().__init__(kv_budget, prefix_cache)  # False: SLED
        self.server_id = server_id
        # True: a batch is priced padded (edgespec.hardware.batch_pricing), else summed
        self.padded = padded
        # prefill in parts (edgespec.core.prefill_parts): the tokens a part forwards (None:
        # one pass)
        self.part_tokens = part_tokens
        self.cost = cost
        self.draft_cost = draft_cost  # the co-located draft (fused rounds), if it has one
        self.max_batch_size = max_batch_size
        self.max_batch_tokens = max_batch_tokens
        self.queue: list[Session] = []
        self.batch: list[Session] = []
        self.batch_start_s = 0.0
        self.batch_new = self.batch_cached = 0
        self.batch_draft_s = 0.0  # the co-located draft's part of the batch step (fused)
        self.busy = False
        self.dispatch_pending = False
        self.num_active = 0
        self.num_enqueued = 0
        # Fast path without ARRIVE events (edgespec.sim.fast.inbound): blocks in flight to
        # this server as a heap of (arrival_s, device_id, session), and its WAKE time.
        self.inbound: list[tuple[float, int, Session]] = []
        self.wake_s = math.inf
