"""VerificationService request handling, value by value: a reply's timing and batch
fields, the shutdown error for queued calls, the in-flight rule, a session closed while
queued, a token's session quota and the busy flag (failed batches, forcing, cancels, expiry
and the baselines: test_server_failures.py). Time is a hand-set clock that only the backend
advances (``STEP_S`` per forward pass), so every time in a reply is exact."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.round_log import RoundLog, read_round_log
from edgespec.runtime.server.service import VerificationService
from tests.runtime.bad_cases import GREEDY, PROMPT
from tests.runtime.server.handling_service import (
    ClockedBackend,
    RecordingFcfs,
    make_service,
    open_sessions,
    settle,
    verify_later,
)


def test_a_reply_carries_its_batch_size_queue_depth_and_times(target: TransformersTarget) -> None:
    """Three calls queued at t=0, batches of at most 2: the first batch (a, b) runs from
    t=1 to 1.5 with c still queued; c's batch of one runs from 1.5 to 2 with none."""

    async def scenario() -> tuple[list[Any], VerificationService]:
        service, _, clock = make_service(target, max_batch_size=2)
        open_sessions(service, "a", "b", "c")
        tasks = [verify_later(service, sid, (1, 2)) for sid in ("a", "b", "c")]
        await asyncio.sleep(0)  # all three queued at t=0
        clock.t = 1.0
        await service.start()
        replies = await settle(tasks)
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
        policy = RecordingFcfs(wait=True)
        service, backend, _ = make_service(target, policy, batch_wait_s=60.0)
        open_sessions(service, "a", "b")
        await service.start()
        task = verify_later(service, "a", (1,))
        for _ in range(100):
            await asyncio.sleep(0)
            if policy.forces:
                break
        before = service.stats().queue_depth
        await service.stop()
        after = service.stats().queue_depth  # before the failed caller's own cleanup runs
        (result,) = await settle([task])
        assert backend.passes == []
        return before, after, result, policy.forces

    before, after, result, forces = asyncio.run(scenario())
    assert (before, after, forces) == (1, 0, [False])
    assert isinstance(result, RequestError)
    assert (result.code, result.message) == (ErrorCode.UNAVAILABLE, "server shutting down")


async def _stop_during_a_forward_pass(
    target: TransformersTarget,
) -> tuple[ClockedBackend, Any]:
    """One call's batch held in the engine (gated backend) while stop() runs; the gate
    opens 50 ms later. Returns the stopped service's backend and the call's task."""
    service, backend, _ = make_service(target)
    backend.gate = threading.Event()
    open_sessions(service, "a")
    await service.start()
    task = verify_later(service, "a", (1,))
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
        service, _, _ = make_service(target)
        open_sessions(service, "a")
        first = verify_later(service, "a", (1,))
        await asyncio.sleep(0)  # queued; the scheduler is not running yet
        second = verify_later(service, "a", (2,))
        await service.start()
        done = await settle([first, second])
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
        service, _, _ = make_service(target, round_log=log)
        open_sessions(service, "a", "b")
        tasks = [verify_later(service, "a", (1,)), verify_later(service, "b", (1,))]
        await asyncio.sleep(0)
        assert service.close_session("b")
        await service.start()
        results = await settle(tasks)
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
        service, _, _ = make_service(target, max_sessions_per_client=1)
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
        service, backend, _ = make_service(target)
        open_sessions(service, "a")
        idle = service.stats().busy
        await service.start()
        await asyncio.wait_for(service.verify(VerifyCall("a", len(PROMPT), (1,))), 10)
        after = service.stats().busy
        await service.stop()
        return idle, backend.busy_seen, after

    assert asyncio.run(scenario()) == (False, [True], False)
