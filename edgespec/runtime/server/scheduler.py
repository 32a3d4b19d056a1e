"""The verification service's scheduler
(:class:`~edgespec.runtime.server.service.VerificationService`): continuous batching.
Whenever the engine is free it shows the queue (as :class:`PendingVerification` records)
to the batching policy through the
:class:`~edgespec.runtime.server.batch_planner.BatchPlanner`, runs the chosen batch in
one forward pass on a worker thread, and resolves each waiting call. Requests arriving
during a forward pass join the next batch; the calls of a batch whose forward pass
failed are retried one by one to find the culprit."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from edgespec.core.types import PendingVerification
from edgespec.policies.contracts import PolicyContractError
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall, VerifyOutcome, VerifyReply
from edgespec.runtime.server.admission import Admission
from edgespec.runtime.server.batch_planner import BatchPlanner
from edgespec.runtime.server.counters import ServiceCounters
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.round_log import RoundLog
from edgespec.runtime.server.verification import rule_labels


@dataclass(slots=True)
class _Entry:
    pending: PendingVerification
    call: VerifyCall
    future: asyncio.Future[VerifyReply]


class Scheduler:
    """The queue of admitted calls (``queue``, by entry id; ``in_flight``: their sessions)
    and the loop (:meth:`run`) that batches them onto ``engine``."""

    def __init__(
        self,
        engine: VerificationEngine,
        planner: BatchPlanner,
        admission: Admission,
        counters: ServiceCounters,
        clock: Callable[[], float],
        batch_wait_s: float,
        round_log: RoundLog | None,
    ) -> None:
        self._engine = engine
        self._planner = planner
        self._admission = admission
        self._counters = counters
        self._clock = clock
        self._batch_wait_s = batch_wait_s
        self._round_log = round_log
        self.queue: dict[int, _Entry] = {}
        self.in_flight: set[str] = set()
        self._in_batch: list[_Entry] = []  # the last batch taken (stop() answers its calls)
        self._wake = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")
        self._isolate: set[int] = set()

    async def submit(self, pending: PendingVerification, call: VerifyCall) -> VerifyReply:
        """Queue an admitted call and wait for the batch that verifies it."""
        future: asyncio.Future[VerifyReply] = asyncio.get_running_loop().create_future()
        self.queue[pending.entry_id] = _Entry(pending, call, future)
        self.in_flight.add(call.session_id)
        self._wake.set()
        try:
            return await future
        finally:
            # a caller that went away before dispatch must not advance its session later
            self.queue.pop(pending.entry_id, None)
            self.in_flight.discard(call.session_id)

    def stop(self) -> None:
        """Fail every call not yet answered, queued or in the batch being verified, with
        UNAVAILABLE (its client reconnects elsewhere); wait for the worker thread."""
        for entry in [*self._in_batch, *self.queue.values()]:
            if not entry.future.done():
                entry.future.set_exception(
                    RequestError(ErrorCode.UNAVAILABLE, "server shutting down")
                )
        self._in_batch = []
        self.queue.clear()
        self._executor.shutdown(wait=True)

    async def run(self) -> None:
        """Batch after batch, for as long as the service runs."""
        loop = asyncio.get_running_loop()
        while True:
            entry_ids = await self._next_plan()
            entries = self._in_batch = [self.queue.pop(i) for i in entry_ids]
            start = self._clock()
            calls = [e.call for e in entries]
            self._counters.busy = True
            try:
                outcomes = await loop.run_in_executor(
                    self._executor, self._engine.verify_batch, calls
                )
            except Exception:  # a backend failure must not kill the server ...
                if len(entries) > 1:  # ... nor fail the other sessions of the batch
                    for e in entries:
                        self.queue[e.pending.entry_id] = e
                    self._isolate.update(e.pending.entry_id for e in entries)
                    continue
                self._fail(entries[0], sys.exc_info()[1])
                continue
            finally:
                self._counters.busy = False
            self._answer(entries, outcomes, start, self._clock())

    def _answer(
        self,
        entries: Sequence[_Entry],
        outcomes: Sequence[VerifyOutcome | RequestError],
        start: float,
        end: float,
    ) -> None:
        """Count and log a verified batch, then resolve each of its calls."""
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
            reply = VerifyReply(outcome, queue_s, end - start, len(entries), len(self.queue))
            e.future.set_result(reply)
            if outcome.hidden_request is None:
                self._counters.answered(outcome, queue_s)

    def _fail(self, entry: _Entry, exc: BaseException | None) -> None:
        self._isolate.discard(entry.pending.entry_id)
        if not entry.future.done():
            message = f"verification failed in the target backend: {exc!r}"
            entry.future.set_exception(RequestError(ErrorCode.INTERNAL, message))

    def _plan(self, force: bool) -> tuple[int, ...]:
        """The batching policy's choice over the whole queue, checked by the shared
        contract. A policy that raises or breaks its contract fails the calls it was shown
        (``INTERNAL``, naming the policy) and the scheduler goes on with later ones."""
        queue = [e.pending for e in self.queue.values()]
        try:
            return self._planner.plan(queue, force)
        except PolicyContractError as exc:
            message = str(exc)
        for pending in queue:
            entry = self.queue.pop(pending.entry_id)
            if not entry.future.done():
                entry.future.set_exception(RequestError(ErrorCode.INTERNAL, message))
        return ()

    async def _next_plan(self) -> tuple[int, ...]:
        if self._isolate:  # entries of a failed batch run one by one to find the culprit
            entry_id = min(self._isolate)
            self._isolate.discard(entry_id)
            if entry_id in self.queue:
                return (entry_id,)
        while True:
            while not self.queue:
                self._wake.clear()
                await self._wake.wait()
            # force, as in the simulator: every live session is waiting in the queue, so
            # nothing else can arrive to join a batch (policies.interfaces.BatchLimits)
            entry_ids = self._plan(force=len(self.queue) >= self._engine.num_live_sessions())
            if entry_ids:
                return entry_ids
            if not self.queue:  # the policy failed every call it was shown
                continue
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), self._batch_wait_s)
            except TimeoutError:
                # liveness valve (server only): a live session's client may never come back,
                # so after batch_wait_s without an arrival the policy must dispatch
                if self.queue and (entry_ids := self._plan(force=True)):
                    return entry_ids

    def _labels(self, session_id: str) -> dict[str, object]:
        """What a session's records carry beyond the round (a lossy rule's labels)."""
        try:
            spec = self._engine.session_spec(session_id)
            return rule_labels(spec.verification_rule, self._engine.session_rule(session_id))
        except RequestError:  # closed meanwhile
            return {}
