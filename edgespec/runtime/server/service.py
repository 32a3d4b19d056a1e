"""Verification service: requests → queue → batching policy → engine → replies.

Transport-free (asyncio only): :mod:`edgespec.runtime.wire.grpc_server` adapts it to gRPC.
The scheduler (:mod:`edgespec.runtime.server.scheduler`) is continuous batching: whenever
the engine is free it shows the queue (as :class:`PendingVerification` records) to the
configured batching policy — the same policy objects the simulator uses — runs the chosen
batch in one forward pass on a worker thread, and resolves each waiting call. Requests
arriving during a forward pass join the next batch. The batch plans come from
:class:`~edgespec.runtime.server.batch_planner.BatchPlanner`; fused runs are set up by
:mod:`edgespec.runtime.server.fused_setup` and run by :mod:`edgespec.runtime.server.fused_run`
(the fused baseline by :mod:`edgespec.runtime.server.fused_baseline`), as ``config.fused_rounds``
says: drafted by the co-located draft, or cloud-only (:mod:`edgespec.runtime.server.cloud_only`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor
from typing import TypeVar

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.types import BatchRecord, PendingVerification
from edgespec.policies.interfaces import BatchingPolicy, WindowPolicy
from edgespec.runtime.backends.base import DraftBackend
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    FusedCall,
    FusedRound,
    ServerStats,
    SessionSpec,
    VerifyCall,
    VerifyReply,
)
from edgespec.runtime.server.admission import Admission
from edgespec.runtime.server.batch_planner import BatchPlanner
from edgespec.runtime.server.centralized import centralized_generate
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.counters import ServiceCounters, ServiceMetrics
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.fused_baseline import fused_baseline
from edgespec.runtime.server.fused_run import stream_fused_run
from edgespec.runtime.server.fused_setup import ServerWindow, fused_draft_factory, start_fused_run
from edgespec.runtime.server.round_log import RoundLog
from edgespec.runtime.server.run_threads import ThreadPerRun
from edgespec.runtime.server.scheduler import Scheduler

_T = TypeVar("_T")


class VerificationService:
    """One target model's verification server (asyncio; run everything on one loop).

    ``draft_factory``: the co-located draft model (a fresh backend per fused run or
    baseline request; cloud-only fused rounds run it only for ``cloud_only_draft_pass``,
    which needs one: else a :class:`~edgespec.config.ConfigError`); ``window``: the window
    policy consulted after each fused round (:meth:`run_fused`), one object for all
    sessions, called under a lock; ``round_log``: where each verified entry's record goes
    (``edgespec serve --round-log``); ``log``: where the service's event lines go (a
    session opened with a lossy rule: ``edgespec serve`` prints them on stderr)."""

    def __init__(
        self,
        engine: VerificationEngine,
        config: ServerConfig,
        batching: BatchingPolicy,
        draft_factory: Callable[[], DraftBackend] | None = None,
        clock: Callable[[], float] = time.monotonic,
        batch_wait_s: float = 0.002,
        window: WindowPolicy | None = None,
        round_log: RoundLog | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.engine, self._log, self.config = engine, log, config
        self._cloud_only = config.fused_rounds == "cloud_only"
        self._draft_factory = fused_draft_factory(config, draft_factory)  # what fused rounds run
        self.runs_fused_rounds = self._draft_factory is not None or self._cloud_only  # Health
        self._window = None if window is None else ServerWindow(window, config.max_draft_tokens)
        self._clock = clock
        self._next_id = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._counters = ServiceCounters()
        self.batches: deque[BatchRecord] = self._counters.batches
        self._admission = Admission(engine, config)
        planner = BatchPlanner(batching, config, clock)
        self._scheduler = Scheduler(engine, planner, self._admission, self._counters, clock,
                                    batch_wait_s, round_log, config.group_wait_s)  # fmt: skip
        # a fused run holds a thread of its own for all its rounds, ended with it (at most
        # one per session the server admits: each client is bounded by its sessions)
        self._fused_executor = ThreadPerRun("edgespec-fused")
        self._fused_sessions: dict[str, object] = {}  # session -> its fused run in progress

    @property
    def fused_executor(self) -> Executor:
        """Where fused runs (RunFused, fused-mode Generate) run their worker threads."""
        return self._fused_executor

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(c) for c in (self._scheduler.run(), self._expiry_loop())]

    def session_serial(self, session_id: str) -> int:  # (NOT_FOUND when it is not open)
        return self.engine.session_serial(session_id)

    async def stop(self) -> None:
        """Stop scheduling; every call not yet answered, queued or in the batch being
        verified, fails with UNAVAILABLE (its client reconnects elsewhere)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._scheduler.stop()
        self._fused_executor.shutdown(wait=False, cancel_futures=True)

    # --- API used by the gRPC servicer (edgespec.runtime.wire.grpc_server)

    def open_session(
        self, spec: SessionSpec, owner: str | None = None, *, fresh: bool = False
    ) -> None:
        """Open ``spec``; with auth on, ``owner`` (the caller's identity) owns the session:
        only it may verify or close it (:mod:`edgespec.runtime.server.clients`). The same
        spec and owner again, before the session's first verification, is a retry of an open
        whose reply was lost: it succeeds and changes nothing, unless ``fresh`` (a baseline
        opens a session of its own and closes it at its end): then it already exists."""
        if not self._guard(lambda: self._admission.open(spec, owner, self._clock())):
            if fresh:
                raise RequestError(
                    ErrorCode.INVALID_ARGUMENT, f"session {spec.session_id!r} already exists"
                )
            return  # a retry of the open that made it (its reply was lost)
        self._counters.num_sessions_opened += 1
        rule = self.engine.session_rule(spec.session_id)
        if not rule.lossless and self._log is not None:
            describe = getattr(rule, "describe", None)
            what = describe() if callable(describe) else f"LOSSY {spec.verification_rule!r}"
            self._log(f"session {spec.session_id!r} (client {spec.client_id!r}) opened: {what}")

    def close_session(
        self, session_id: str, owner: str | None = None, serial: int | None = None
    ) -> bool:
        """Close ``session_id`` (``True``: it was open); its queued or running verification
        fails ``NOT_FOUND`` (:meth:`~edgespec.runtime.server.scheduler.Scheduler.fail_session`).
        ``serial``: only while it is the session opened as that one (a baseline closing its
        own: a session opened under its id since, by any client, stays)."""
        if serial is not None and not self.engine.is_session(session_id, serial):
            return False
        closed = self._guard(lambda: self._admission.close(session_id, owner))
        self._scheduler.fail_session(session_id, "closed")
        self._counters.num_sessions_closed += closed
        return closed

    # fmt: off
    async def verify(self, call: VerifyCall, owner: str | None = None,
                     time_left_s: float | None = None, in_run: bool = False) -> VerifyReply:
        # fmt: on
        """Validate, enqueue and wait for the batch that verifies ``call`` (for ``owner``,
        the caller's identity when auth is on; ``time_left_s``: its caller's, dropped when
        it is gone at its pass; ``in_run``: a fused run's round, the only kind a session
        takes while its run holds it). A retry of the session's last committed round gets
        its reply again at once (``queue_s``, ``verify_s``, ``batch_size`` 0); a resend of
        the call still queued or being verified, or committed and yet to be answered,
        takes it over (:meth:`.scheduler.Scheduler.take_over`)."""
        scheduler = self._scheduler
        self._guard(lambda: self._admission.clients.check_owner(call.session_id, owner))
        if not in_run and call.session_id in self._fused_sessions:
            self._guard(lambda: _refuse_in_run(call.session_id))
        taken = scheduler.take_over(call, time_left_s)  # a resend of the call queued or running
        if taken is not None:  # (before a replay: a round its batch has committed but not
            self._counters.num_resent += 1  # yet answered is still that batch's)
            return await scheduler.wait(*taken)
        replayed = self._guard(lambda: self._admission.replay(call, owner))
        if replayed is not None:  # a retry of the round last committed: no queue, no pass
            self._counters.num_resent += 1
            return VerifyReply(replayed, 0.0, 0.0, 0, len(scheduler.queue))

        def check() -> PendingVerification:
            queued = (e.call.session_id for e in scheduler.queue.values())
            entry_id = self._next_id + 1
            pending = self._admission.admit(
                call, owner, queued, scheduler.in_flight, entry_id, self._clock()
            )
            self._next_id = entry_id
            return pending

        admitted = self._guard(check)
        pending = scheduler.left_calls.arrival_kept(admitted, call)  # a resend keeps its place
        # a group's refusal too (the place kept for a resend then)
        future = self._guard(lambda: scheduler.enqueue(pending, call, time_left_s))
        self._counters.num_resent += pending is not admitted
        return await scheduler.wait(pending.entry_id, future)

    async def generate(
        self,
        spec: SessionSpec,
        fused: bool,
        gamma: int,
        owner: str | None = None,
        on_logprobs: Callable[[tuple[TokenLogprobs, ...]], None] | None = None,
        on_prompt_logprobs: Callable[[tuple[TokenLogprobs, ...]], None] | None = None,
    ) -> AsyncIterator[tuple[tuple[int, ...], bool]]:
        """Baselines, streamed as ``(committed token ids, finished)`` chunks: centralized
        (K = 0 per step, i.e. plain autoregressive decoding batched with everyone else) or
        fused (the server drafts with a static window of ``gamma`` through the drafter's
        own round loop; cloud-only, the target decodes one token per round:
        :mod:`edgespec.runtime.server.fused_baseline`). The session is closed before the
        chunk marked finished is yielded: a client stops reading there, and what it asks
        next (the server's counters, a new session within its quota) finds it closed. A
        centralized session that asks for ``logprobs`` has each chunk's given to
        ``on_logprobs`` before the chunk is yielded, and one that asks for ``prompt_logprobs``
        the prompt's to ``on_prompt_logprobs`` before its first chunk; a fused run refuses
        both."""
        if fused and (spec.sampling.logprobs, spec.sampling.prompt_logprobs) != (None, None):
            asked = "logprobs" if spec.sampling.logprobs is not None else "prompt_logprobs"
            message = f"a fused Generate returns no {asked}: run it centralized, or verify it"
            raise RequestError(ErrorCode.INVALID_ARGUMENT, message)
        if fused:
            limit = self.config.max_draft_tokens
            factory, cloud_only = self._draft_factory, self._cloud_only
            baseline = fused_baseline(self, spec, gamma, limit, factory, cloud_only, owner)
            async for chunk in baseline:
                yield chunk
            return
        chunks = centralized_generate(self, spec, owner, on_logprobs, on_prompt_logprobs)
        async with contextlib.aclosing(chunks) as centralized:
            async for chunk in centralized:
                yield chunk

    async def run_fused(
        self, call: FusedCall, owner: str | None = None
    ) -> AsyncIterator[FusedRound]:
        """A run of fused rounds for an open session (:mod:`edgespec.runtime.server.fused_run`),
        streamed round by round; the last round carries the run's end. The session is held
        from its checks (another run on it is refused) until the run's worker has stopped,
        however the run ends."""
        session_id = call.session_id
        start = self._guard(lambda: start_fused_run(
            call, owner, self.engine, self._admission.clients, self.config.max_draft_tokens,
            self._draft_factory, self._cloud_only, self._fused_sessions))  # fmt: skip
        mark = self._fused_sessions[session_id] = object()  # on the loop, as the check
        try:
            run = stream_fused_run(self, call, start, self._window, self._clock, owner)
            async with contextlib.aclosing(run) as rounds:  # its worker stopped before release
                async for fused_round in rounds:
                    if fused_round.end is not None:  # its worker verifies no more: the
                        self._end_run(session_id, mark)  # device's next round may
                    yield fused_round
        finally:
            self._end_run(session_id, mark)

    def _end_run(self, session_id: str, mark: object) -> None:
        """The session's fused run ``mark`` over: the next one on it, begun since, stays."""
        if self._fused_sessions.get(session_id) is mark:
            del self._fused_sessions[session_id]

    def stats(self) -> ServerStats:
        return self._counters.stats(self.engine.counters(), queue_depth=len(self._scheduler.queue))

    def metrics(self) -> ServiceMetrics:
        """The Prometheus endpoint's view: :meth:`stats` and the service's totals."""
        return self._counters.metrics(
            self.engine.counters(), queue_depth=len(self._scheduler.queue)
        )

    def refused(self, exc: RequestError) -> None:
        """Count ``exc``, a refused request, by its code (``edgespec_rejected_requests_total``,
        Stats' ``num_rejected``) unless it is counted already: the servicer passes every
        call it ends with an error, and the service counts its own checks' refusals as they
        are raised; either way a refusal counts once."""
        if not exc.counted:
            exc.counted = True
            self._counters.rejected(exc.code)

    # --- internals

    def _guard(self, fn: Callable[[], _T]) -> _T:
        try:
            return fn()
        except RequestError as exc:
            self.refused(exc)
            raise

    async def _expiry_loop(self) -> None:
        period = min(self.config.session_timeout_s / 4, 1.0)
        while True:
            await asyncio.sleep(period)
            expired = self.engine.expire_idle(
                self.config.session_timeout_s, self._scheduler.in_flight
            )
            for session_id in expired:
                self._admission.forget(session_id)
                self._scheduler.fail_session(session_id, "expired")
            self._counters.num_expired += len(expired)


def _refuse_in_run(session_id: str) -> None:
    raise RequestError(ErrorCode.FAILED_PRECONDITION, f"session {session_id!r} has a fused run "
                       "in progress: its rounds are the run's until its last chunk")  # fmt: skip
