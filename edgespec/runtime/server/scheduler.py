"""The verification service's scheduler
(:class:`~edgespec.runtime.server.service.VerificationService`): continuous batching.
Whenever the engine is free it shows the queue (as :class:`PendingVerification` records)
to the batching policy through the
:class:`~edgespec.runtime.server.batch_planner.BatchPlanner`, runs the chosen batch in
one forward pass on a worker thread, and resolves each waiting call. Requests arriving
during a forward pass join the next batch; the calls of a batch whose forward pass
failed are retried one by one to find the culprit. A client's grouped calls (one of its
batches, ``VerifyCall.batch_id``) are queued but kept from the policy's view until the
whole group is there or ``group_wait_s`` has passed
(:mod:`~edgespec.runtime.server.batch_groups`)."""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from edgespec.core.types import PendingVerification
from edgespec.policies.contracts import PolicyContractError
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall, VerifyOutcome, VerifyReply
from edgespec.runtime.server.admission import Admission
from edgespec.runtime.server.batch_groups import BatchGroups
from edgespec.runtime.server.batch_planner import BatchPlanner
from edgespec.runtime.server.counters import ServiceCounters
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.prefill_parts import PrefillPart
from edgespec.runtime.server.resends import LeftCalls, QueueEntry, still_waiting, take_over
from edgespec.runtime.server.round_log import RoundLog
from edgespec.runtime.server.verification import rule_labels


class Scheduler:
    """The queue of admitted calls (``queue``, by entry id) and the loop (:meth:`run`)
    that batches them onto ``engine``.

    A call is verified only if its caller still waits when its forward pass starts: one
    cancelled while queued, or whose deadline has passed, leaves the queue and its session
    does not advance. Once its pass has started it commits, and its session stays in flight
    until the batch ends (a retry of that round then gets its outcome again,
    :meth:`~edgespec.runtime.server.engine_sessions.SessionTable.replay`). A session that
    closes fails its calls (:meth:`fail_session`). A held call of a group
    (:class:`~edgespec.runtime.server.batch_groups.BatchGroups`) is in ``queue`` (its
    session is in flight, queue depths count it) but not shown to the policy, and counts as
    not yet waiting for the ``force`` rule; its group's timer releases it."""

    def __init__(
        self,
        engine: VerificationEngine,
        planner: BatchPlanner,
        admission: Admission,
        counters: ServiceCounters,
        clock: Callable[[], float],
        batch_wait_s: float,
        round_log: RoundLog | None,
        group_wait_s: float,
    ) -> None:
        self._engine = engine
        self._planner = planner
        self._admission = admission
        self._counters = counters
        self._clock = clock
        self._batch_wait_s = batch_wait_s
        self._round_log = round_log
        self.queue: dict[int, QueueEntry] = {}
        self._in_batch: list[QueueEntry] = []  # the batch being verified (stop() answers its calls)
        self._wake = asyncio.Event()
        self._groups = BatchGroups(group_wait_s, self._wake.set)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")
        self._isolate: set[int] = set()
        self.left_calls = LeftCalls(engine.session_serial)  # a resend keeps their arrival

    @property
    def in_flight(self) -> set[str]:
        """The sessions with a call queued or in the batch being verified."""
        running = (e.call.session_id for e in self._in_batch if not e.closed)
        return {*(e.call.session_id for e in self.queue.values()), *running}

    def enqueue(
        self, pending: PendingVerification, call: VerifyCall, time_left_s: float | None = None
    ) -> asyncio.Future[VerifyReply]:
        """Queue an admitted call (``time_left_s``: its caller's, ``None`` without a
        deadline); the future of its reply, for :meth:`wait`. A grouped
        call whose ``batch_calls`` differs from its group's is ``INVALID_ARGUMENT``, nothing
        queued (:meth:`.batch_groups.BatchGroups.hold`): raised here, not in the wait, so
        the service counts it as it counts its own checks' refusals."""
        future: asyncio.Future[VerifyReply] = asyncio.get_running_loop().create_future()
        serial = self._engine.session_serial(call.session_id)
        self._groups.hold(pending.entry_id, pending.client_id, call)
        expires_s = self._expiry(time_left_s)
        parts_s = self.left_calls.queued(call)  # a resumed call's parts so far
        self.queue[pending.entry_id] = QueueEntry(pending, call, serial, future, False, expires_s,
                                                  parts_s)  # fmt: skip
        self._wake.set()
        return future

    def take_over(
        self, call: VerifyCall, time_left_s: float | None = None
    ) -> tuple[int, asyncio.Future[VerifyReply]] | None:
        """A resend of the call its session has queued or in the batch being verified takes
        that entry over (:func:`~edgespec.runtime.server.resends.take_over`), with its own
        deadline: (entry id, its reply's future), for :meth:`wait`; ``None``: no such entry."""
        entry = take_over((*self._in_batch, *self.queue.values()), call)
        if entry is None:
            return None
        entry.expires_s = self._expiry(time_left_s)
        return entry.pending.entry_id, entry.future

    def _expiry(self, time_left_s: float | None) -> float:
        return math.inf if time_left_s is None else self._clock() + time_left_s

    async def wait(self, entry_id: int, future: asyncio.Future[VerifyReply]) -> VerifyReply:
        """The reply of queue entry ``entry_id`` (:meth:`enqueue`'s or :meth:`take_over`'s
        ``future``), once the batch that verifies it has run."""
        try:
            return await future
        finally:  # a caller that went away before dispatch must not advance its session
            entry = self.queue.get(entry_id)
            if entry is not None and entry.future is future:  # (not one a resend took over)
                del self.queue[entry_id]
                self._groups.leave(entry_id)
                self.left_calls.left(entry)

    def fail_session(self, session_id: str, event: str) -> None:
        """``session_id`` was just closed (``event``: how): its queued call leaves the queue,
        one in the pass running is dropped, each caller ``NOT_FOUND`` naming the session."""
        self.left_calls.forget(session_id)
        if self._round_log is not None:
            self._round_log.forget(session_id)
        for entry_id, entry in list(self.queue.items()):
            if entry.call.session_id == session_id:
                del self.queue[entry_id]
                self._groups.leave(entry_id)
                _reject(entry, f"session {session_id!r} was {event} while this verification "
                        "was queued: nothing was verified")  # fmt: skip
        for entry in self._in_batch:
            if entry.call.session_id == session_id and not entry.closed:
                entry.closed = True
                _reject(entry, f"session {session_id!r} was {event} during this verification: "
                        "its result is dropped")  # fmt: skip

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
        self._groups.clear()
        self._executor.shutdown(wait=True)

    async def run(self) -> None:
        """Batch after batch, for as long as the service runs."""
        while True:
            entry_ids = await self._next_plan()
            taken = [self.queue.pop(i) for i in entry_ids]
            self._in_batch = still_waiting(taken, self._clock(), self.left_calls)
            if self._in_batch:
                await self._verify(self._in_batch)
            self._in_batch = []  # (a cancelled run leaves it to stop())

    async def _verify(self, entries: list[QueueEntry]) -> None:
        """One forward pass over ``entries``; a failed pass of several runs them again one
        by one, those whose callers still wait."""
        loop = asyncio.get_running_loop()
        start = self._clock()
        calls, serials = [e.call for e in entries], [e.serial for e in entries]
        self._counters.busy = True
        try:
            outcomes = await loop.run_in_executor(
                self._executor, self._engine.verify_batch, calls, serials
            )
        except Exception:  # a backend failure must not kill the server ...
            if len(entries) > 1:  # ... nor fail the other sessions of the batch
                for e in entries:
                    if not e.future.done():
                        self.queue[e.pending.entry_id] = e
                        self._isolate.add(e.pending.entry_id)
            else:
                self._fail(entries[0], sys.exc_info()[1])
            return
        finally:
            self._counters.busy = False
        self._answer(entries, outcomes, start, self._clock())

    def _answer(
        self,
        entries: Sequence[QueueEntry],
        outcomes: Sequence[VerifyOutcome | RequestError | PrefillPart],
        start: float,
        end: float,
    ) -> None:
        """Count and log a verified batch, then resolve each of its calls (a call whose
        pass forwarded a prefill part goes back to the queue)."""
        self._counters.record_batch([e.pending for e in entries], start, end)
        pairs = zip(entries, outcomes, strict=True)
        verified = [  # decided rounds of open sessions (not those awaiting hidden states)
            (e.pending, o)
            for e, o in pairs
            if isinstance(o, VerifyOutcome) and not e.closed and o.hidden_request is None
        ]
        for pending, done in verified:
            self._admission.slo.verified(pending.session_id, done.result)
        if self._round_log is not None:
            labels = {p.session_id: self._labels(p.session_id) for p, _ in verified}
            parts_s = {e.pending.session_id: e.parts_s for e in entries}
            self._round_log.batch(verified, start, end, len(entries), labels, parts_s)
        for e, outcome in zip(entries, outcomes, strict=True):
            e.parts_s += end - start if isinstance(outcome, PrefillPart) else 0.0
            if e.future.done():  # its caller gone: a resend goes on from the parts kept
                if isinstance(outcome, PrefillPart) and not e.closed:
                    self.left_calls.left(e)
                continue
            if isinstance(outcome, RequestError):
                e.future.set_exception(outcome)
                continue
            if isinstance(outcome, PrefillPart):  # its next pass's sizes; its place kept
                sizes = (outcome.num_new_tokens, outcome.num_cached_tokens)
                e.pending = replace(e.pending, num_new_tokens=sizes[0], num_cached_tokens=sizes[1])
                self.queue[e.pending.entry_id] = e
                continue
            queue_s = start - e.pending.enqueued_s - e.parts_s  # its parts' passes: verify_s
            reply = VerifyReply(outcome, queue_s, end - start + e.parts_s, len(entries),
                                len(self.queue))  # fmt: skip
            e.future.set_result(reply)
            if outcome.hidden_request is None:
                self._counters.answered(outcome, queue_s)

    def _fail(self, entry: QueueEntry, exc: BaseException | None) -> None:
        self._isolate.discard(entry.pending.entry_id)
        if not entry.future.done():
            message = f"verification failed in the target backend: {exc!r}"
            entry.future.set_exception(RequestError(ErrorCode.INTERNAL, message))

    def _shown(self) -> tuple[PendingVerification, ...]:
        """The queue as the batching policy sees it (read-only), without the held calls."""
        held = self._groups.is_held
        return tuple(e.pending for i, e in self.queue.items() if not held(i))

    def _plan(self, force: bool) -> tuple[int, ...]:
        """The batching policy's choice over the queue it is shown, checked by the shared
        contract. A policy that raises or breaks its contract fails the calls it was shown
        (``INTERNAL``, naming the policy) and the scheduler goes on with later ones."""
        queue = self._shown()
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
            while not (shown := len(self._shown())):
                self._wake.clear()
                await self._wake.wait()
            # force, as in the simulator: every live session is waiting in the queue, so
            # nothing else can arrive to join a batch (policies.interfaces.BatchLimits); a
            # held call is not waiting yet (its group's timer releases it)
            entry_ids = self._plan(force=shown >= self._engine.num_live_sessions())
            if entry_ids:
                return entry_ids
            if not self._shown():  # the policy failed every call it was shown
                continue
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), self._batch_wait_s)
            except TimeoutError:
                # liveness valve (server only): a live session's client may never come back,
                # so after batch_wait_s without an arrival the policy must dispatch
                if self._shown() and (entry_ids := self._plan(force=True)):
                    return entry_ids

    def _labels(self, session_id: str) -> dict[str, object]:
        """What a session's records carry beyond the round (a lossy rule's labels)."""
        try:
            spec = self._engine.session_spec(session_id)
            return rule_labels(spec.verification_rule, self._engine.session_rule(session_id))
        except RequestError:  # closed meanwhile
            return {}


def _reject(entry: QueueEntry, message: str) -> None:
    if not entry.future.done():
        entry.future.set_exception(RequestError(ErrorCode.NOT_FOUND, message))
