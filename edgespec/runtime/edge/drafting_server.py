"""The batched edge drafting server of Zhu et al. (seed 001): one process hosting ONE draft
model drafts for K users' sessions in batches of b, and sends their blocks to a
verification server (``edgespec serve``).

Each decoding step, for batch m = 1..M: draft batch m (γ greedy tokens for every session
of the batch: γ forward passes of the draft over the whole batch, the first one catching
up on the tokens the last verification committed; :mod:`~edgespec.runtime.edge.batched_draft`),
then send each session's block for verification. Pipelined, the verification of batch m
runs while batch m + 1 drafts: one verify call per session, sent concurrently from a thread
pool while this thread drafts on, all with the batch's ``batch_id`` and ``batch_calls``, so
the server holds them until the batch is there and verifies it in one pass
(:mod:`~edgespec.runtime.server.batch_groups`). The step ends when every batch's
verification is back (Eq. 20, C_{n,m} = max{C^d_{n,m}, C_{n,m−1}} + T^v_{n,m}; steps are
barriers). Without pipelining each batch's verification is awaited before the next
batch drafts. A session that finished (its token budget or EOS, as the server says) drops
out of its batch. A verify call past the verifier's deadline (a batch of long prompts'
first pass on a busy server) is sent again, identical, until ``progress_timeout_s`` after
its first sending (no sending waits past it): the server takes the resend over with the
pass it runs for it (:mod:`~edgespec.runtime.server.resends`): prompts forwarded once.

Sessions speak the single-session drafter's protocol (:class:`SessionSpec`,
:class:`VerifyCall`, :class:`VerifyReply`; γ capped by
:func:`~edgespec.runtime.edge.rounds.capped_gamma`, rounds recorded by
:class:`~edgespec.runtime.edge.rounds.Ledger`). The verifier is called from several threads
at once: :class:`~edgespec.runtime.wire.grpc_client.RemoteVerifier` may be (it holds only
its gRPC channel and stub, which are thread-safe), as may
:class:`~edgespec.runtime.wire.inprocess.LocalVerifier` (the engine locks). Greedy only:
the outputs equal target-only greedy decoding, pipelined or not.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from edgespec.config import ConfigError
from edgespec.hardware.drafting_plan import build_plan
from edgespec.policies.drafting_contract import check_plan
from edgespec.policies.drafting_server.planner import PipelinePlan, observe_tasks
from edgespec.policies.interfaces import DraftingPlanner
from edgespec.runtime.edge.batched_draft import BatchedDraftModel
from edgespec.runtime.edge.bounded_calls import verify_bounded
from edgespec.runtime.edge.drafting_results import DraftingServerResult, SessionOutput
from edgespec.runtime.edge.drafting_sessions import Clock, Lane, close_all, make_lanes, open_all
from edgespec.runtime.edge.rounds import Verifier, capped_gamma, network_time_s
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import VerifyCall, VerifyReply


@dataclass(frozen=True, slots=True)
class _SentBatch:
    """A drafted batch whose verify calls are in flight (one future per session)."""

    lanes: tuple[Lane, ...]
    calls: tuple[VerifyCall, ...]
    replies: tuple[Future[_Answer], ...]
    start_s: float
    drafted_s: float


@dataclass(frozen=True, slots=True)
class _Answer:
    """A verify call's reply, when it came back, and its resends (``resent_s``: the last
    one's sending)."""

    reply: VerifyReply
    end_s: float
    resent_s: float | None
    num_resends: int


def plan_sessions(
    planner: DraftingPlanner,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: Sequence[int],
    bandwidth_hz: float,
) -> PipelinePlan:
    """``planner``'s plan for these sessions, checked
    (:func:`~edgespec.hardware.drafting_plan.build_plan`, as the simulator plans): the
    prompts' token lengths and the sessions' budgets through the shared input builder
    (:func:`~edgespec.policies.drafting_server.planner.observe_tasks`); a loopback or LAN
    run has no radio, so every session's spectral efficiency is 1 bit/s/Hz over
    ``bandwidth_hz``."""
    lengths = [len(p) for p in prompts]
    efficiencies = [1.0] * len(prompts)
    return build_plan(planner, observe_tasks(lengths, max_new_tokens, efficiencies, bandwidth_hz))


def consecutive_batches(num_prompts: int, batch_size: int) -> tuple[tuple[int, ...], ...]:
    """Prompts 0..K−1 in consecutive batches of ``batch_size`` (the last one shorter)."""
    if batch_size < 1:
        raise ConfigError("batch_size", f"must be >= 1, got {batch_size}")
    return tuple(
        tuple(range(s, min(s + batch_size, num_prompts))) for s in range(0, num_prompts, batch_size)
    )


def run_order(
    num_prompts: int, batch_size: int | None, gamma: int | None, plan: PipelinePlan | None
) -> tuple[tuple[tuple[int, ...], ...], int]:
    """The batches and γ of a run: the ``plan``'s (checked,
    :func:`~edgespec.policies.drafting_contract.check_plan`), else consecutive
    batches of ``batch_size`` and ``gamma``; a :class:`ConfigError` naming the setting."""
    if plan is not None:
        if batch_size is not None or gamma is not None:
            raise ConfigError("plan", "gives the batches and gamma: drop batch_size and gamma")
        plan = check_plan(plan, num_prompts)
        return plan.batches, plan.spec_len
    if batch_size is None or gamma is None:
        raise ConfigError("batch_size", "give a batch size and gamma, or a plan")
    if gamma < 1:
        raise ConfigError("gamma", f"must be >= 1, got {gamma}")
    return consecutive_batches(num_prompts, batch_size), gamma


def check_budgets(num_prompts: int, max_new_tokens: Sequence[int]) -> None:
    """:class:`~edgespec.config.ConfigError` naming the first bad setting."""
    if num_prompts < 1:
        raise ConfigError("prompts", "need at least one prompt")
    if len(max_new_tokens) != num_prompts:
        raise ConfigError(
            "max_new_tokens", f"{len(max_new_tokens)} budgets for {num_prompts} prompts"
        )
    if min(max_new_tokens) < 1:
        raise ConfigError("max_new_tokens", f"must be >= 1, got {min(max_new_tokens)}")


def run_drafting_server(
    verifier: Verifier,
    draft: BatchedDraftModel,
    prompts: Sequence[Sequence[int]],
    *,
    batch_size: int | None = None,
    gamma: int | None = None,
    plan: PipelinePlan | None = None,
    max_new_tokens: int | Sequence[int],
    pipelined: bool,
    client_id: str = "drafting-server",
    clock: Clock = time.perf_counter,
    progress_timeout_s: float = 60.0,
    on_resend: Callable[[RequestError], None] | None = None,
) -> DraftingServerResult:
    """Generate every prompt greedily (one session each, ``max_new_tokens`` per session or
    one for all); pipelined or not (module docstring). The batches (prompt indices, in
    processing order) and γ are the ``plan``'s (see :func:`plan_sessions`; :func:`run_order`)
    or consecutive runs of ``batch_size`` prompts and ``gamma``. A call past its deadline
    is sent again until ``progress_timeout_s`` after its first sending (module docstring;
    ``on_resend``, told of each from the thread that sends it, with the deadline's error).
    Sessions are closed at the end, also on an error or an interrupt, all at once
    (:func:`~edgespec.runtime.edge.drafting_sessions.close_all`), once the calls in flight
    are back (none is sent again after the run failed)."""
    budgets = (
        [max_new_tokens] * len(prompts) if isinstance(max_new_tokens, int) else list(max_new_tokens)
    )
    check_budgets(len(prompts), budgets)
    order, gamma = run_order(len(prompts), batch_size, gamma, plan)
    lanes = make_lanes(prompts, budgets, client_id, clock)
    tag = hashlib.sha256(lanes[0].session_id.encode()).hexdigest()[:16]  # new every run
    run = _Run(verifier, draft, gamma, pipelined, clock, tag, (progress_timeout_s, on_resend))
    passes = draft.num_passes
    start = clock()
    try:
        open_all(verifier, lanes, client_id)
        with ThreadPoolExecutor(max_workers=len(lanes)) as pool:
            try:
                num_steps = run.steps(pool, [[lanes[k] for k in batch] for batch in order])
            except BaseException:
                run.failed.set()  # the calls in flight are not sent again
                raise
        wall_s = clock() - start
    finally:
        close_all(verifier, lanes)
    return DraftingServerResult(
        sessions=tuple(_session_output(lane) for lane in lanes),
        pipelined=pipelined,
        batch_size=max(len(batch) for batch in order),
        gamma=gamma,
        num_steps=num_steps,
        num_draft_passes=draft.num_passes - passes,
        wall_s=wall_s,
        draft_s=run.draft_s,
        verify_wait_s=run.verify_wait_s,
        schedule=tuple(run.schedule),
        num_resends=run.num_resends,
    )


def _session_output(lane: Lane) -> SessionOutput:
    rounds = lane.ledger.rounds
    return SessionOutput(
        session_id=lane.session_id,
        output_token_ids=tuple(lane.ledger.output),
        num_rounds=len(rounds),
        num_drafted=sum(r.num_drafted for r in rounds),
        num_accepted=sum(r.num_accepted for r in rounds),
    )


class _Run:
    """The decoding steps of one run, and the drafting thread's time split."""

    def __init__(
        self,
        verifier: Verifier,
        draft: BatchedDraftModel,
        gamma: int,
        pipelined: bool,
        clock: Clock,
        batch_tag: str,
        resends: tuple[float, Callable[[RequestError], None] | None],
    ) -> None:
        self.verifier, self.draft, self.gamma = verifier, draft, gamma
        self.pipelined, self.clock = pipelined, clock
        self.progress_timeout_s, self.on_resend = resends
        self.failed = threading.Event()  # set when the run failed: no more resends
        self.num_resends = 0
        self.batch_tag = batch_tag  # batch_id "<tag>:<n>": the run's n-th batch sent
        self.num_sent = 0
        self.draft_s = self.verify_wait_s = 0.0
        self.schedule: list[tuple[int, ...]] = []

    def steps(self, pool: ThreadPoolExecutor, batches: list[list[Lane]]) -> int:
        """Run decoding steps until every session finished; returns their number."""
        num_steps = 0
        while True:
            live = [[x for x in batch if not x.finished] for batch in batches]
            active = [lanes for lanes in live if lanes]
            if not active:
                return num_steps
            num_steps += 1
            self.schedule.append(tuple(m for m, lanes in enumerate(live) if lanes))
            in_flight: list[_SentBatch] = []
            for lanes in active:
                in_flight.append(self._send(pool, lanes))
                if not self.pipelined:
                    self._collect(in_flight.pop())
            for sent in in_flight:  # the step's barrier
                self._collect(sent)

    def _send(self, pool: ThreadPoolExecutor, lanes: list[Lane]) -> _SentBatch:
        """Draft the batch's blocks and send their verify calls (without waiting)."""
        start = self.clock()
        contexts = [lane.context for lane in lanes]
        gammas = [capped_gamma(self.gamma, x.max_new_tokens, len(x.ledger.output)) for x in lanes]
        blocks = self.draft.draft([lane.state for lane in lanes], contexts, gammas)
        drafted = self.clock()
        self.draft_s += drafted - start
        self.num_sent += 1
        batch_id = f"{self.batch_tag}:{self.num_sent}"
        calls = tuple(
            VerifyCall(
                session_id=lane.session_id,
                prefix_len=len(context),
                draft_token_ids=block,
                draft_s=drafted - start,
                network_s=lane.ledger.history.observation(start).rtt_s,
                batch_id=batch_id,
                batch_calls=len(lanes),
            )
            for lane, context, block in zip(lanes, contexts, blocks, strict=True)
        )
        replies = tuple(pool.submit(self._verify, c) for c in calls)
        return _SentBatch(tuple(lanes), calls, replies, start, drafted)

    def _verify(self, call: VerifyCall) -> _Answer:
        """``call``'s reply (on a pool thread); one past its deadline is sent again,
        identical, until ``progress_timeout_s`` after its first sending (or the run
        failed), then its error is raised; no sending waits past that time."""
        clock = self.clock
        first_s, resent_s, num_resends = clock(), None, 0
        while True:
            left_s = self.progress_timeout_s - (clock() - first_s)
            try:
                reply = verify_bounded(self.verifier, call, left_s)
            except RequestError as exc:
                late = clock() - first_s >= self.progress_timeout_s
                if not exc.past_deadline or self.failed.is_set() or late:
                    raise
                if self.on_resend is not None:
                    self.on_resend(exc)
                resent_s, num_resends = clock(), num_resends + 1
                continue
            return _Answer(reply, clock(), resent_s, num_resends)

    def _collect(self, sent: _SentBatch) -> None:
        """Wait for the batch's replies and commit them."""
        waited = self.clock()
        answers = [future.result() for future in sent.replies]
        self.verify_wait_s += self.clock() - waited
        for lane, call, answer in zip(sent.lanes, sent.calls, answers, strict=True):
            end = answer.end_s
            network_s = network_time_s(answer.reply, sent.drafted_s, answer.resent_s, end)
            times = (sent.start_s, end, sent.drafted_s - sent.start_s, network_s / 2, network_s / 2)
            num_drafted = len(call.draft_token_ids)
            lane.finished = lane.ledger.commit(self.gamma, num_drafted, answer.reply, times)
            self.num_resends += answer.num_resends
