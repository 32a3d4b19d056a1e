"""Policy Protocols: the one code path shared by the simulator and the real server.

Every policy is a pure object: it takes immutable observations (records from
``edgespec.core.types`` and the small ones here) and returns a decision. Time is passed
in as ``now_s``; randomness as a ``numpy.random.Generator``. A policy imports nothing
from ``sim/`` or ``runtime/`` and no grpc or torch.

Call order in both hosts:

1. A request arrives → ``RoutingPolicy.route(loads, rng)`` picks its target server
   (once per session; the session stays there so its KV cache can be reused).
2. Each round the session asks ``WindowPolicy.next_window(obs)`` for a
   :class:`WindowDecision` (γ, mode). Distributed (``fused=False``): the device drafts γ
   tokens and sends them. Fused (``fused=True``, DSD §3.3): the round runs on the server,
   whose co-located draft model drafts γ tokens on the server's accelerator before they
   are verified; consecutive fused rounds do not cross the network. A session may switch
   mode from one round to the next (:mod:`edgespec.policies.inputs` says where the policy
   is consulted in each mode).
3. The server enqueues a :class:`PendingVerification`; whenever the engine is free it
   calls ``BatchingPolicy.select(queue, now_s, limits)``; an empty plan means "wait
   for the next arrival", unless ``limits.force`` is set.
4. The verification result goes back to the device, which builds the next
   :class:`WindowObservation` from it.

Two policy kinds belong to one paper's system each:

- Zhu et al.'s drafting server (:class:`DraftingPlanner`): once its users' requests are
  known, the drafting server builds a
  :class:`~edgespec.policies.drafting_server.planner.PipelineObservation`
  (:func:`~edgespec.policies.drafting_server.planner.observe_tasks`), calls ``plan(obs)`` once,
  splits the uplink by ``plan.shares`` and runs ``plan.batches`` in order, drafting
  ``plan.spec_len`` tokens per round.
- WISV's semantic verification (:class:`SemanticHead`): at a session's round the
  verifier finds the greedy mismatches and asks
  :func:`~edgespec.policies.semantic.judge.judge_mismatches`, which builds
  ``inputs(h_d, h_t, csi)`` for them and checks ``rejects(x, threshold)``'s answer; the
  earliest rejected mismatch ends the round.

WISP's stop predictor (:class:`DraftStopPolicy`) is asked, token by token, whether the
device keeps drafting the round's block.

Every kind is registered by name (:mod:`edgespec.policies.registry`), so a host takes a
new planner, head, or routing, batching or window policy by its name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from edgespec.core.types import BatchPlan, PendingVerification, ServerLoad

if TYPE_CHECKING:
    from edgespec.policies.drafting_server.planner import PipelineObservation, PipelinePlan


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """Hard limits the server imposes on one batch.

    ``max_batch_tokens`` bounds Σ num_new_tokens (compute); ``max_context_tokens`` bounds
    Σ num_context_tokens (KV memory, the server's KV budget). ``force``: the engine is idle
    and every live session of the server is in the queue, so nothing else can arrive to
    join the batch and a policy that would wait must dispatch what it has (both hosts).
    The real server also sets it when ``batch_wait_s`` passed with no arrival after a
    policy chose to wait: a client that never comes back must not stall the others.
    """

    max_batch_size: int = 16
    max_batch_tokens: int = 4096
    max_context_tokens: int = 1 << 30
    force: bool = False


@dataclass(frozen=True, slots=True)
class WindowObservation:
    """What a window policy sees before a device drafts its next block.

    Built in both hosts by :class:`edgespec.policies.inputs.WindowHistory`, whose
    docstring gives each field's one meaning (``previous_gamma``: the policy's last answer,
    0 before round 1; ``recent_acceptance``: accepted / drafted over the last 4 rounds,
    ``None`` before the first; ``queue_depth``: reported with the last verdict; ``rtt_s``:
    the last round's uplink + downlink; ``tpot_s``: time per output token so far).
    """

    previous_gamma: int
    recent_acceptance: float | None
    last_num_accepted: int | None = None
    queue_depth: int = 0
    rtt_s: float = 0.0
    tpot_s: float | None = None
    previous_fused: bool = False
    """Whether the last round ran fused (its decision's ``fused``)."""
    pair: str = ""
    """The draft–target pair the session runs on, as the host names it (the simulator:
    ``"<device>><server>"``; the runtime, drafter and server alike: the client's id). A
    policy that keeps state per pair (AWC's stabiliser) keys it so."""


@dataclass(frozen=True, slots=True)
class WindowDecision:
    """A window policy's answer for one round: draft ``gamma`` tokens (≥ 1), on the device
    (``fused=False``, distributed) or with the server's co-located draft (``fused=True``)."""

    gamma: int
    fused: bool = False


@runtime_checkable
class RoutingPolicy(Protocol):
    """Chooses a target server for a new session. Called once per session."""

    def route(self, loads: Sequence[ServerLoad], rng: np.random.Generator) -> int:
        """Return the ``server_id`` of one of ``loads``."""
        ...


@runtime_checkable
class BatchingPolicy(Protocol):
    """Chooses which queued verifications run together in the next forward pass.

    Called by the server each time the engine becomes free or a request arrives while
    it is free. Must return ids from ``queue`` only, respecting ``limits``; ``queue`` is
    a tuple in every host (:func:`~edgespec.policies.contracts.decide_batch`), read, not
    changed.
    """

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan: ...


@runtime_checkable
class WindowPolicy(Protocol):
    """Chooses the draft window γ, and the mode, of a session's next round.

    Called once before every round, in both modes, with the observation the host built
    (:class:`edgespec.policies.inputs.WindowHistory`); the answer is checked by
    :func:`edgespec.policies.contracts.check_window`. A policy may keep state across calls
    (AWC smooths per draft–target pair) but reads no clock and no host object.
    """

    def next_window(self, obs: WindowObservation) -> WindowDecision: ...


@runtime_checkable
class PairStateWindow(Protocol):
    """A window policy whose per-pair state travels with the session between hosts.

    The simulator has one policy object for the whole run; the runtime has one on the
    device and one on the server, and a fused run moves the session's decisions from one to
    the other and back. Call order, for a session of draft–target pair ``pair``:

    1. the handing-over host calls ``pair_state(pair)`` and sends the tuple with the
       session's history (:class:`edgespec.policies.history_snapshot.HistorySnapshot`);
    2. the receiving host calls ``restore_pair_state(pair, state)`` before its first
       ``next_window`` for the session (``ValueError`` naming the problem when ``state``
       is malformed; ``()`` restores the initial state);
    3. at the end of the fused run the server hands it back the same way.

    The host treats the tuple as opaque numbers: finite floats, at most
    :data:`edgespec.policies.history_snapshot.MAX_WINDOW_STATE` of them.
    """

    def pair_state(self, pair: str) -> tuple[float, ...]: ...

    def restore_pair_state(self, pair: str, state: tuple[float, ...]) -> None: ...


@runtime_checkable
class DraftStopPolicy(Protocol):
    """Says, token by token, whether a device keeps drafting (WISP's stop predictor,
    :mod:`edgespec.policies.stop_drafting`).

    Call order per round, in the real drafter and in the simulator alike:

    1. the window policy gives γ, which is K_max for the round;
    2. for k = 1..K_max the device runs the draft forward that gives position k's
       distribution, computes its features (one row, in
       :data:`~edgespec.policies.stop_drafting.STOP_FEATURE_NAMES` order) and calls
       ``keep_mask(row[None, :])`` through
       :func:`~edgespec.policies.stop_drafting.checked_keep_mask`: ``True`` — token k
       joins the block, go on; ``False`` — stop: token k was drafted (its pass is paid) but
       is not sent;
    3. the block (the kept tokens) is sent.

    The simulator asks for every position of a captured trace at once; the answer for a
    row must not depend on the other rows given with it.
    """

    def keep_mask(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        """One bool per row of an n × 5 feature matrix: ``True`` = predicted accepted."""
        ...


@runtime_checkable
class DraftingPlanner(Protocol):
    """Plans a drafting server's known tasks (Zhu et al.'s problem P): which tasks batch
    together, the speculation length, the uplink's split. Called once per set of tasks
    (module docstring); pure, no clock. ``progress(done, total)``, when given, is told
    how far a long planning is (the simulator's bar).

    Both hosts take it by name (``pipeline.planner.name`` of a ``pipeline:`` scenario,
    :data:`edgespec.policies.registry.PLANNER`), built and called by
    :mod:`edgespec.hardware.drafting_plan` (``build_planner``, ``build_plan``): the
    simulator in :func:`edgespec.sim.drafting_server.build.run_pipeline`, the runtime in
    ``edgespec drafting-server --plan`` (:mod:`edgespec.runtime.commands.drafting_server_plan`).
    Its plan is checked by :func:`edgespec.policies.drafting_contract.check_plan`."""

    def plan(
        self, obs: PipelineObservation, progress: Callable[[int, int], None] | None = None
    ) -> PipelinePlan: ...


@runtime_checkable
class SemanticHead(Protocol):
    """Judges a greedy mismatch harmful or not from the draft's and the target's hidden
    states and the channel's features (WISV's decision head). ``draft_hidden`` and
    ``target_hidden``: the hidden sizes it takes; ``num_csi``: how many CSI features.

    Built by name (kind ``head``) in both hosts. Call order, in the real server's semantic
    rule (a round's mismatches at once) and in WISV's in-process rollout (one mismatch at a
    time) alike, always through
    :func:`edgespec.policies.semantic.judge.judge_mismatches`:

    1. the host finds the round's greedy mismatches (draft token ≠ target argmax) and, for
       the n it asks about, takes both models' hidden rows there;
    2. ``inputs(h_d, h_t, csi)`` with the rows as float64 (n × each width) and ``csi`` the
       channel's :func:`~edgespec.policies.semantic.csi.csi_features`: the n × d_in rows;
    3. ``rejects(x, threshold)`` (T in 0..16): one bool per row, checked by
       :func:`edgespec.policies.contracts.check_head_answer` (a 1-D bool array of n);
    4. the earliest rejected mismatch ends the round (the target's token there); accepted
       ones commit the draft's token.
    """

    @property
    def draft_hidden(self) -> int: ...

    @property
    def target_hidden(self) -> int: ...

    @property
    def num_csi(self) -> int: ...

    def inputs(
        self,
        draft_hidden: npt.NDArray[np.float64],
        target_hidden: npt.NDArray[np.float64],
        csi: tuple[float, ...],
    ) -> npt.NDArray[np.float64]:
        """The head's input rows for n positions (n × its input width)."""
        ...

    def rejects(self, x: npt.NDArray[np.float64], threshold: float) -> npt.NDArray[np.bool_]:
        """Per row of ``x``: reject the drafted token (at threshold T, 0..16)."""
        ...
