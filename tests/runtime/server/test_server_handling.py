"""VerificationService request handling, value by value: a reply's timing and batch
fields, the shutdown error for queued calls, the in-flight rule, the busy flag, failed
batches (isolation order, a batch of two, a session closed while queued), the force
flag, a caller cancelled mid-batch, expiry, and the baselines (centralized K = 0, a
token's session quota, the fused gamma range's ends). Time is a hand-set clock that only
the backend advances (``_STEP_S`` per forward pass), so every time in a reply is exact."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.core.types import BatchPlan, PendingVerification, SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.policies.interfaces import BatchLimits
from edgespec.runtime.backends.base import DraftBackend
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.round_log import RoundLog, read_round_log
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import GREEDY, PROMPT
from tests.runtime.round_fakes import Clock
from tests.runtime.wrapped_target import WrappedTarget

_STEP_S = 0.5  # what one forward pass advances the clock by


class _Backend(WrappedTarget):
    """The real target, recording each forward pass's item lengths, advancing ``clock``
    by ``_STEP_S``, raising on token 13, and (with ``gate``) waiting for it to open."""

    def __init__(self, inner: TransformersTarget, clock: Clock) -> None:
        super().__init__(inner)
        self._clock = clock
        self.passes: list[list[int]] = []
        self.gate: threading.Event | None = None
        self.entered = threading.Event()
        self.finished = threading.Event()
        self.busy_seen: list[bool] = []
        self.service: VerificationService | None = None

    def forward(self, items: Any) -> Any:
        self.entered.set()
        if self.service is not None:
            self.busy_seen.append(self.service.stats().busy)
        if self.gate is not None:
            assert self.gate.wait(10)
        self.passes.append([len(item.new_token_ids) for item in items])
        self._clock.t += _STEP_S
        if any(13 in item.new_token_ids for item in items):
            raise RuntimeError("poisoned token 13")
        out = self._inner.forward(items)
        self.finished.set()
        return out


class _Recording:
    """FCFS that records each call's ``limits.force``; with ``wait`` it answers an empty
    plan (wait) unless forced."""

    def __init__(self, wait: bool = False) -> None:
        self.wait = wait
        self.forces: list[bool] = []

    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        self.forces.append(limits.force)
        if self.wait and not limits.force:
            return BatchPlan(())
        return FcfsBatching().select(queue, now_s, limits)


def _service(
    target: TransformersTarget,
    policy: Any = None,
    batch_wait_s: float = 0.002,
    engine_clock: Clock | None = None,
    round_log: RoundLog | None = None,
    **overrides: Any,
) -> tuple[VerificationService, _Backend, Clock]:
    clock = Clock()
    backend = _Backend(target, clock)
    config = from_dict(ServerConfig, overrides)
    engine = VerificationEngine(backend, clock=engine_clock or clock)
    service = VerificationService(
        engine,
        config,
        policy or FcfsBatching(),
        clock=clock,
        batch_wait_s=batch_wait_s,
        round_log=round_log,
    )
    backend.service = service
    return service, backend, clock


def _open(service: VerificationService, *sids: str) -> None:
    for sid in sids:
        service.open_session(SessionSpec(sid, "x", PROMPT, GREEDY))


def _verify(service: VerificationService, sid: str, draft: tuple[int, ...]) -> Any:
    return asyncio.ensure_future(service.verify(VerifyCall(sid, len(PROMPT), draft)))


async def _settle(tasks: Sequence[Any]) -> list[Any]:
    return list(await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10))


def test_a_reply_carries_its_batch_size_queue_depth_and_times(target: TransformersTarget) -> None:
    """Three calls queued at t=0, batches of at most 2: the first batch (a, b) runs from
    t=1 to 1.5 with c still queued; c's batch of one runs from 1.5 to 2 with none."""

    async def scenario() -> tuple[list[Any], VerificationService]:
        service, _, clock = _service(target, max_batch_size=2)
        _open(service, "a", "b", "c")
        tasks = [_verify(service, sid, (1, 2)) for sid in ("a", "b", "c")]
        await asyncio.sleep(0)  # all three queued at t=0
        clock.t = 1.0
        await service.start()
        replies = await _settle(tasks)
        await service.stop()
        return replies, service

    (a, b, c), service = asyncio.run(scenario())
    assert isinstance(a, VerifyReply) and isinstance(b, VerifyReply) and isinstance(c, VerifyReply)
    assert (a.batch_size, a.queue_depth, a.queue_s, a.verify_s) == (2, 1, 1.0, 0.5)
    assert (b.batch_size, b.queue_depth, b.queue_s, b.verify_s) == (2, 1, 1.0, 0.5)
    assert (c.batch_size, c.queue_depth, c.queue_s, c.verify_s) == (1, 0, 1.5, 0.5)
    assert [(r.start_s, r.end_s, r.batch_size) for r in service.batches] == [
        (1.0, 1.5, 2),
        (1.5, 2.0, 1),
    ]
    stats = service.stats()
    assert (stats.num_batches, stats.batch_size_histogram, stats.queue_depth) == (
        2,
        ((1, 1), (2, 1)),
        0,
    )


def test_calls_still_queued_at_stop_get_unavailable(target: TransformersTarget) -> None:
    """A waiting policy holds a's call (b is live but idle, batch_wait_s is long): stop()
    cancels the loops, fails the call UNAVAILABLE and empties the queue at once."""

    async def scenario() -> tuple[int, int, Any, list[bool]]:
        policy = _Recording(wait=True)
        service, backend, _ = _service(target, policy, batch_wait_s=60.0)
        _open(service, "a", "b")
        await service.start()
        task = _verify(service, "a", (1,))
        for _ in range(100):
            await asyncio.sleep(0)
            if policy.forces:
                break
        before = service.stats().queue_depth
        await service.stop()
        after = service.stats().queue_depth  # before the failed caller's own cleanup runs
        (result,) = await _settle([task])
        assert backend.passes == []
        return before, after, result, policy.forces

    before, after, result, forces = asyncio.run(scenario())
    assert (before, after, forces) == (1, 0, [False])
    assert isinstance(result, RequestError)
    assert (result.code, result.message) == (ErrorCode.UNAVAILABLE, "server shutting down")


async def _stop_during_a_forward_pass(
    target: TransformersTarget,
) -> tuple[_Backend, Any]:
    """One call's batch held in the engine (gated backend) while stop() runs; the gate
    opens 50 ms later. Returns the stopped service's backend and the call's task."""
    service, backend, _ = _service(target)
    backend.gate = threading.Event()
    _open(service, "a")
    await service.start()
    task = _verify(service, "a", (1,))
    assert await asyncio.to_thread(backend.entered.wait, 10)  # the batch is in the engine
    threading.Timer(0.05, backend.gate.set).start()
    await service.stop()
    return backend, task


def test_stop_waits_for_the_forward_pass_in_progress(target: TransformersTarget) -> None:
    async def scenario() -> bool:
        backend, task = await _stop_during_a_forward_pass(target)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return backend.finished.is_set()

    assert asyncio.run(scenario()) is True


def test_a_call_in_the_batch_being_verified_at_stop_gets_unavailable(
    target: TransformersTarget,
) -> None:
    """stop() cancels the scheduler while the engine runs the batch: the call does not hang,
    it fails like a queued one."""

    async def scenario() -> BaseException | None:
        _, task = await _stop_during_a_forward_pass(target)
        done, _ = await asyncio.wait([task], timeout=5)
        assert done, "the call in the engine at stop() never returned"
        error: BaseException | None = task.exception()
        return error

    error = asyncio.run(scenario())
    assert isinstance(error, RequestError)
    assert (error.code, error.message) == (ErrorCode.UNAVAILABLE, "server shutting down")


def test_a_second_call_for_a_session_in_flight_is_refused_and_counted(
    target: TransformersTarget,
) -> None:
    async def scenario() -> tuple[Any, Any, Any, int]:
        service, _, _ = _service(target)
        _open(service, "a")
        first = _verify(service, "a", (1,))
        await asyncio.sleep(0)  # queued; the scheduler is not running yet
        second = _verify(service, "a", (2,))
        await service.start()
        done = await _settle([first, second])
        third = await asyncio.wait_for(
            service.verify(
                VerifyCall("a", len(PROMPT) + done[0].outcome.result.num_accepted + 1, (2,))
            ),
            10,
        )
        rejected = service.stats().num_rejected
        await service.stop()
        return done[0], done[1], third, rejected

    first, second, third, rejected = asyncio.run(scenario())
    assert isinstance(first, VerifyReply) and first.outcome.result.num_drafted == 1
    assert isinstance(second, RequestError)
    assert (second.code, second.message) == (
        ErrorCode.FAILED_PRECONDITION,
        "session 'a' already has a verification in flight",
    )
    assert isinstance(third, VerifyReply) and third.outcome.result.num_drafted == 1
    assert rejected == 1


def test_a_session_closed_while_queued_leaves_the_queue(
    target: TransformersTarget, tmp_path: Path
) -> None:
    """b is closed after its call was queued: b's caller gets NOT_FOUND at once, naming
    the session, and a runs alone (its reply and round record say batch size 1)."""
    log = RoundLog(tmp_path / "rounds.jsonl")

    async def scenario() -> list[Any]:
        service, _, _ = _service(target, round_log=log)
        _open(service, "a", "b")
        tasks = [_verify(service, "a", (1,)), _verify(service, "b", (1,))]
        await asyncio.sleep(0)
        assert service.close_session("b")
        await service.start()
        results = await _settle(tasks)
        again = await asyncio.wait_for(
            service.verify(
                VerifyCall("a", len(PROMPT) + results[0].outcome.result.num_accepted + 1, (2,))
            ),
            10,
        )
        await service.stop()
        return [*results, again]

    a, b, again = asyncio.run(scenario())
    log.close()
    assert isinstance(a, VerifyReply) and (a.batch_size, a.queue_depth) == (1, 0)
    assert isinstance(b, RequestError)
    assert (b.code, b.message) == (
        ErrorCode.NOT_FOUND,
        "session 'b' was closed while this verification was queued: nothing was verified",
    )
    assert isinstance(again, VerifyReply) and again.batch_size == 1
    records = list(read_round_log(log.path))
    assert [(r.request_id, r.round_index, r.batch_size) for r in records] == [
        ("a", 0, 1),
        ("a", 1, 1),
    ]


def test_a_generate_stream_counts_against_its_tokens_session_quota(
    target: TransformersTarget,
) -> None:
    """With auth a session belongs to the caller's token, whatever client_id it names."""
    spec = SessionSpec("g", "other-id", PROMPT, SamplingParams(max_new_tokens=2))

    async def scenario() -> None:
        service, _, _ = _service(target, max_sessions_per_client=1)
        service.open_session(SessionSpec("s", "x", PROMPT, GREEDY), owner="tok")
        async for _ in service.generate(spec, False, 0, owner="tok"):
            break

    with pytest.raises(RequestError) as info:
        asyncio.run(scenario())
    assert (info.value.code, info.value.message) == (
        ErrorCode.RESOURCE_EXHAUSTED,
        "this token already has 1 open sessions (max_sessions_per_client)",
    )


def test_the_busy_flag_is_set_only_during_a_forward_pass(target: TransformersTarget) -> None:
    async def scenario() -> tuple[bool, list[bool], bool]:
        service, backend, _ = _service(target)
        _open(service, "a")
        idle = service.stats().busy
        await service.start()
        await asyncio.wait_for(service.verify(VerifyCall("a", len(PROMPT), (1,))), 10)
        after = service.stats().busy
        await service.stop()
        return idle, backend.busy_seen, after

    assert asyncio.run(scenario()) == (False, [True], False)


def test_a_failed_batch_is_retried_one_by_one_in_arrival_order(
    target: TransformersTarget,
) -> None:
    """a (2 drafts), b (poisoned, 2 drafts), c (1 draft): after the batch of three fails,
    a, b and c run alone in that order; only b fails, and the failed pass is not counted."""

    async def scenario() -> tuple[list[Any], list[list[int]], VerificationService]:
        service, backend, _ = _service(target)
        _open(service, "a", "b", "c")
        tasks = [_verify(service, s, d) for s, d in (("a", (1, 2)), ("b", (13, 2)), ("c", (3,)))]
        await asyncio.sleep(0)
        await service.start()
        results = await _settle(tasks)
        await service.stop()
        return results, backend.passes, service

    (a, b, c), passes, service = asyncio.run(scenario())
    n = len(PROMPT)
    assert passes == [[n + 2, n + 2, n + 1], [n + 2], [n + 2], [n + 1]]
    assert isinstance(a, VerifyReply) and isinstance(c, VerifyReply)
    assert (a.batch_size, c.batch_size) == (1, 1)
    assert isinstance(b, RequestError) and b.code is ErrorCode.INTERNAL
    assert [(r.start_s, r.end_s, r.batch_size) for r in service.batches] == [
        (0.5, 1.0, 1),
        (1.5, 2.0, 1),
    ]


def test_a_failed_batch_of_two_fails_only_the_culprit(target: TransformersTarget) -> None:
    async def scenario() -> list[Any]:
        service, _, _ = _service(target)
        _open(service, "a", "b")
        tasks = [_verify(service, "a", (1, 2)), _verify(service, "b", (13,))]
        await asyncio.sleep(0)
        await service.start()
        results = await _settle(tasks)
        await service.stop()
        return results

    a, b = asyncio.run(scenario())
    assert isinstance(a, VerifyReply) and a.outcome.result.num_drafted == 2
    assert isinstance(b, RequestError)
    assert (b.code, b.message) == (
        ErrorCode.INTERNAL,
        "verification failed in the target backend: RuntimeError('poisoned token 13')",
    )


def test_force_is_set_exactly_when_every_live_session_is_queued(
    target: TransformersTarget,
) -> None:
    """One of two live sessions queued: not forced; both queued: forced."""

    async def scenario() -> list[bool]:
        policy = _Recording()
        service, _, _ = _service(target, policy)
        _open(service, "a", "b")
        await service.start()
        reply = await asyncio.wait_for(service.verify(VerifyCall("a", len(PROMPT), (1,))), 10)
        start = len(PROMPT) + reply.outcome.result.num_accepted + 1
        tasks = [
            asyncio.ensure_future(service.verify(VerifyCall("a", start, (1,)))),
            _verify(service, "b", (1,)),
        ]
        await _settle(tasks)
        await service.stop()
        return policy.forces

    assert asyncio.run(scenario()) == [False, True]


def test_a_waiting_policy_is_forced_after_batch_wait(target: TransformersTarget) -> None:
    async def scenario() -> tuple[Any, list[bool]]:
        policy = _Recording(wait=True)
        service, _, _ = _service(target, policy, batch_wait_s=0.01)
        _open(service, "a", "b")  # b never verifies
        await service.start()
        reply = await asyncio.wait_for(service.verify(VerifyCall("a", len(PROMPT), (1,))), 10)
        await service.stop()
        return reply, policy.forces

    reply, forces = asyncio.run(scenario())
    assert isinstance(reply, VerifyReply) and reply.batch_size == 1
    assert forces == [False, True]


def test_a_caller_cancelled_mid_batch_does_not_stop_the_scheduler(
    target: TransformersTarget,
) -> None:
    async def scenario() -> Any:
        service, backend, _ = _service(target)
        backend.gate = threading.Event()
        _open(service, "a", "b")
        await service.start()
        task = _verify(service, "a", (1,))
        assert await asyncio.to_thread(backend.entered.wait, 10)  # the batch is in the engine
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        backend.gate.set()
        reply = await asyncio.wait_for(service.verify(VerifyCall("b", len(PROMPT), (2,))), 10)
        await service.stop()
        return reply

    reply = asyncio.run(scenario())
    assert isinstance(reply, VerifyReply) and reply.outcome.result.num_drafted == 1


def test_idle_sessions_expire_but_not_one_in_flight(target: TransformersTarget) -> None:
    """session_timeout_s 0.04 (the expiry loop looks every 0.01 s): once the engine's clock
    jumps, the idle a and b expire together (counted 2, their client's slots freed) while
    c, with a call waiting in the queue, stays open."""

    async def scenario() -> tuple[int, int, Any]:
        engine_clock = Clock()
        policy = _Recording(wait=True)
        service, _, _ = _service(
            target,
            policy,
            batch_wait_s=60.0,
            engine_clock=engine_clock,
            session_timeout_s=0.04,
            max_sessions_per_client=3,
        )
        _open(service, "a", "b", "c")
        await service.start()
        task = _verify(service, "c", (1,))
        await asyncio.sleep(0)
        engine_clock.t = 100.0
        for _ in range(500):  # at most 5 s on a loaded machine
            await asyncio.sleep(0.01)
            if service.stats().num_expired_sessions:
                break
        stats = service.stats()
        _open(service, "d", "e")  # a and b no longer count against client x
        await service.stop()
        (result,) = await _settle([task])
        return stats.num_expired_sessions, stats.num_sessions, result

    expired, live, result = asyncio.run(scenario())
    assert (expired, live) == (2, 1)
    assert isinstance(result, RequestError) and result.code is ErrorCode.UNAVAILABLE


def test_centralized_generate_streams_greedy_tokens_and_closes(
    target: TransformersTarget,
) -> None:
    spec = SessionSpec("g", "x", PROMPT, SamplingParams(max_new_tokens=5))

    async def scenario() -> tuple[list[tuple[tuple[int, ...], bool]], int, list[Any], int]:
        service, _, _ = _service(target)
        await service.start()
        chunks = [chunk async for chunk in service.generate(spec, False, 0, owner="tok")]
        stats = service.stats()
        await service.stop()
        sizes = [(r.num_new_tokens, r.num_cached_tokens) for r in service.batches]
        return chunks, stats.num_sessions, sizes, stats.num_tokens_forwarded

    chunks, sessions, sizes, forwarded = asyncio.run(scenario())
    # K = 0: the prompt, then one token per pass (no draft token is ever sent)
    assert sizes == [(8, 0), (1, 8), (1, 9), (1, 10), (1, 11)] and forwarded == 12
    assert [len(tokens) for tokens, _ in chunks] == [1] * 5
    assert [finished for _, finished in chunks] == [False] * 4 + [True]
    assert tuple(t for tokens, _ in chunks for t in tokens) == target_greedy_decode(
        target, PROMPT, 5
    )
    assert sessions == 0


@pytest.mark.parametrize("gamma", [1, 3])
def test_fused_gamma_at_the_ends_of_the_range_is_served(
    target: TransformersTarget, draft_model: Any, gamma: int
) -> None:
    spec = SessionSpec("f", "x", PROMPT, SamplingParams(max_new_tokens=4))

    def drafter() -> DraftBackend:
        return TransformersDraft(draft_model)

    async def scenario() -> tuple[int, ...]:
        config = from_dict(ServerConfig, {"max_draft_tokens": 3})
        service = VerificationService(
            VerificationEngine(target), config, FcfsBatching(), draft_factory=drafter
        )
        await service.start()
        tokens = [t async for chunk, _ in service.generate(spec, True, gamma) for t in chunk]
        await service.stop()
        return tuple(tokens)

    assert asyncio.run(scenario()) == target_greedy_decode(target, PROMPT, 4)
