"""Verification service: requests → queue → batching policy → engine → replies.

Transport-free (asyncio only): :mod:`edgespec.runtime.wire.grpc_server` adapts it to gRPC.
The scheduler loop is continuous batching: whenever the engine is free it shows the
queue (as :class:`PendingVerification` records) to the configured batching policy —
the same policy objects the simulator uses — runs the chosen batch in one forward
pass on a worker thread, and resolves each waiting call. Requests arriving during a
forward pass join the next batch. The batch plans come from
:class:`~edgespec.runtime.server.batch_planner.BatchPlanner`; fused runs are set up by
:mod:`edgespec.runtime.server.fused_setup` and run by :mod:`edgespec.runtime.server.fused_run`
(the fused baseline by :mod:`edgespec.runtime.server.fused_baseline`), as ``config.fused_rounds``
says: drafted by the co-located draft, or cloud-only (:mod:`edgespec.runtime.server.cloud_only`).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from edgespec.core.types import BatchRecord, PendingVerification
from edgespec.policies.contracts import PolicyContractError
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
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.counters import ServiceCounters, ServiceMetrics
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.fused_baseline import fused_baseline
from edgespec.runtime.server.fused_run import stream_fused_run
from edgespec.runtime.server.fused_setup import ServerWindow, fused_draft_factory, start_fused_run
from edgespec.runtime.server.round_log import RoundLog
from edgespec.runtime.server.verification import rule_labels

_T = TypeVar("_T")


@dataclass(slots=True)
class _Entry:
    pending: PendingVerification
    call: VerifyCall
    future: asyncio.Future[VerifyReply]


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
        self.engine = engine
        self._round_log = round_log
        self._log = log
        self.config = config
        self._planner = BatchPlanner(batching, config, clock)
        self._cloud_only = config.fused_rounds == "cloud_only"
        self._draft_factory = fused_draft_factory(config, draft_factory)  # what fused rounds run
        self._window = None if window is None else ServerWindow(window)
        self._clock = clock
        self._batch_wait_s = batch_wait_s
        self._queue: dict[int, _Entry] = {}
        self._in_batch: list[_Entry] = []  # the last batch taken (stop() answers its calls)
        self._in_flight: set[str] = set()
        self._next_id = 0
        self._wake = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")
        self._tasks: list[asyncio.Task[None]] = []
        self._counters = ServiceCounters()
        self.batches: deque[BatchRecord] = self._counters.batches
        self._isolate: set[int] = set()
        self._admission = Admission(engine, config)

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._schedule_loop()),
            asyncio.create_task(self._expiry_loop()),
        ]

    async def stop(self) -> None:
        """Stop scheduling; every call not yet answered, queued or in the batch being
        verified, fails with UNAVAILABLE (its client reconnects elsewhere)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for entry in [*self._in_batch, *self._queue.values()]:
            if not entry.future.done():
                entry.future.set_exception(
                    RequestError(ErrorCode.UNAVAILABLE, "server shutting down")
                )
        self._in_batch = []
        self._queue.clear()
        self._executor.shutdown(wait=True)

    # --- API used by the gRPC servicer (edgespec.runtime.wire.grpc_server)

    def open_session(self, spec: SessionSpec, owner: str | None = None) -> None:
        """Open ``spec``; with auth on, ``owner`` (the caller's identity) owns the session:
        only it may verify or close it (:mod:`edgespec.runtime.server.clients`)."""
        self._guard(lambda: self._admission.open(spec, owner, self._clock()))
        self._counters.num_sessions_opened += 1
        rule = self.engine.session_rule(spec.session_id)
        if not rule.lossless and self._log is not None:
            describe = getattr(rule, "describe", None)
            what = describe() if callable(describe) else f"LOSSY {spec.verification_rule!r}"
            self._log(f"session {spec.session_id!r} (client {spec.client_id!r}) opened: {what}")

    def close_session(self, session_id: str, owner: str | None = None) -> bool:
        closed = self._guard(lambda: self._admission.close(session_id, owner))
        self._counters.num_sessions_closed += closed
        return closed

    async def verify(self, call: VerifyCall, owner: str | None = None) -> VerifyReply:
        """Validate, enqueue and wait for the batch that verifies ``call`` (for ``owner``,
        the caller's identity when auth is on)."""

        def check() -> PendingVerification:
            queued = (e.call.session_id for e in self._queue.values())
            entry_id = self._next_id + 1
            pending = self._admission.admit(
                call, owner, queued, self._in_flight, entry_id, self._clock()
            )
            self._next_id = entry_id
            return pending

        pending = self._guard(check)
        future: asyncio.Future[VerifyReply] = asyncio.get_running_loop().create_future()
        self._queue[pending.entry_id] = _Entry(pending, call, future)
        self._in_flight.add(call.session_id)
        self._wake.set()
        try:
            return await future
        finally:
            # a caller that went away before dispatch must not advance its session later
            self._queue.pop(pending.entry_id, None)
            self._in_flight.discard(call.session_id)

    async def generate(
        self, spec: SessionSpec, fused: bool, gamma: int, owner: str | None = None
    ) -> AsyncIterator[tuple[tuple[int, ...], bool]]:
        """Baselines, streamed as ``(committed token ids, finished)`` chunks: centralized
        (K = 0 per step, i.e. plain autoregressive decoding batched with everyone else) or
        fused (the server drafts with a static window of ``gamma`` through the drafter's
        own round loop; cloud-only, the target decodes one token per round:
        :mod:`edgespec.runtime.server.fused_baseline`)."""
        if fused:
            limit = self.config.max_draft_tokens
            factory, cloud_only = self._draft_factory, self._cloud_only
            async for chunk in fused_baseline(self, spec, gamma, limit, factory, cloud_only):
                yield chunk
            return
        self.open_session(spec, owner)
        try:
            finished = False
            while not finished:
                tokens = self.engine.session_tokens(spec.session_id)
                call = VerifyCall(spec.session_id, len(tokens), ())
                reply = await self.verify(call)
                finished = reply.outcome.finished
                yield reply.outcome.committed_token_ids, finished
        finally:
            self.close_session(spec.session_id)

    async def run_fused(
        self, call: FusedCall, owner: str | None = None
    ) -> AsyncIterator[FusedRound]:
        """A run of fused rounds for an open session (:mod:`edgespec.runtime.server.fused_run`),
        streamed round by round; the last round carries the run's end."""
        start = self._guard(
            lambda: start_fused_run(
                call,
                owner,
                self.engine,
                self._admission.clients,
                self.config.max_draft_tokens,
                self._draft_factory,
                self._cloud_only,
            )
        )
        async for fused_round in stream_fused_run(
            self, call, start, self._window, self._clock, owner
        ):
            yield fused_round

    def stats(self) -> ServerStats:
        return self._counters.stats(self.engine.counters(), queue_depth=len(self._queue))

    def metrics(self) -> ServiceMetrics:
        """The Prometheus endpoint's view: :meth:`stats` and the service's totals."""
        return self._counters.metrics(self.engine.counters(), queue_depth=len(self._queue))

    # --- internals

    def _guard(self, fn: Callable[[], _T]) -> _T:
        try:
            return fn()
        except RequestError as exc:
            self._counters.rejected(exc.code)
            raise

    def _fail(self, entry: _Entry, exc: BaseException | None) -> None:
        self._isolate.discard(entry.pending.entry_id)
        if not entry.future.done():
            message = f"verification failed in the target backend: {exc!r}"
            entry.future.set_exception(RequestError(ErrorCode.INTERNAL, message))

    def _plan(self, force: bool) -> tuple[int, ...]:
        """The batching policy's choice over the whole queue, checked by the shared
        contract. A policy that raises or breaks its contract fails the calls it was shown
        (``INTERNAL``, naming the policy) and the scheduler goes on with later ones."""
        queue = [e.pending for e in self._queue.values()]
        try:
            return self._planner.plan(queue, force)
        except PolicyContractError as exc:
            message = str(exc)
        for pending in queue:
            entry = self._queue.pop(pending.entry_id)
            if not entry.future.done():
                entry.future.set_exception(RequestError(ErrorCode.INTERNAL, message))
        return ()

    async def _next_plan(self) -> tuple[int, ...]:
        if self._isolate:  # entries of a failed batch run one by one to find the culprit
            entry_id = min(self._isolate)
            self._isolate.discard(entry_id)
            if entry_id in self._queue:
                return (entry_id,)
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            # force, as in the simulator: every live session is waiting in the queue, so
            # nothing else can arrive to join a batch (policies.interfaces.BatchLimits)
            entry_ids = self._plan(force=len(self._queue) >= self.engine.num_live_sessions())
            if entry_ids:
                return entry_ids
            if not self._queue:  # the policy failed every call it was shown
                continue
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), self._batch_wait_s)
            except TimeoutError:
                # liveness valve (server only): a live session's client may never come back,
                # so after batch_wait_s without an arrival the policy must dispatch
                if self._queue and (entry_ids := self._plan(force=True)):
                    return entry_ids

    async def _schedule_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            entry_ids = await self._next_plan()
            entries = self._in_batch = [self._queue.pop(i) for i in entry_ids]
            start = self._clock()
            calls = [e.call for e in entries]
            self._counters.busy = True
            try:
                outcomes = await loop.run_in_executor(
                    self._executor, self.engine.verify_batch, calls
                )
            except Exception:  # a backend failure must not kill the server ...
                if len(entries) > 1:  # ... nor fail the other sessions of the batch
                    for e in entries:
                        self._queue[e.pending.entry_id] = e
                    self._isolate.update(e.pending.entry_id for e in entries)
                    continue
                self._fail(entries[0], sys.exc_info()[1])
                continue
            finally:
                self._counters.busy = False
            end = self._clock()
            self._counters.record_batch([e.pending for e in entries], start, end)
            pairs = zip(entries, outcomes, strict=True)
            verified = [  # decided rounds (not those waiting for the draft's hidden states)
                (e.pending, o)
                for e, o in pairs
                if not isinstance(o, RequestError) and o.hidden_request is None
            ]
            for pending, done in verified:
                self._admission.slo.verified(pending.session_id, done.result)
            if self._round_log is not None:
                labels = {p.session_id: self._labels(p.session_id) for p, _ in verified}
                self._round_log.batch(verified, start, end, len(entries), labels)
            for e, outcome in zip(entries, outcomes, strict=True):
                if e.future.done():
                    continue
                if isinstance(outcome, RequestError):
                    e.future.set_exception(outcome)
                    continue
                queue_s = start - e.pending.enqueued_s
                reply = VerifyReply(outcome, queue_s, end - start, len(entries), len(self._queue))
                e.future.set_result(reply)
                if outcome.hidden_request is None:
                    self._counters.answered(outcome, queue_s)

    def _labels(self, session_id: str) -> dict[str, object]:
        """What a session's records carry beyond the round (a lossy rule's labels)."""
        try:
            spec = self.engine.session_spec(session_id)
            return rule_labels(spec.verification_rule, self.engine.session_rule(session_id))
        except RequestError:  # closed meanwhile
            return {}

    async def _expiry_loop(self) -> None:
        period = min(self.config.session_timeout_s / 4, 1.0)
        while True:
            await asyncio.sleep(period)
            expired = self.engine.expire_idle(self.config.session_timeout_s, self._in_flight)
            for session_id in expired:
                self._admission.forget(session_id)
            self._counters.num_expired += len(expired)
