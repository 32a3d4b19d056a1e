"""VerificationService request handling when things go wrong or wait: failed batches
(isolation order, a batch of two), the force flag and a waiting policy, a caller cancelled
mid-batch, expiry, and the baselines (centralized K = 0, the fused gamma range's ends), on
the hand-set clock of :mod:`tests.runtime.server.handling_service`."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.runtime.backends.base import DraftBackend
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import PROMPT
from tests.runtime.round_fakes import Clock
from tests.runtime.server.handling_service import (
    RecordingFcfs,
    make_service,
    open_sessions,
    settle,
    verify_later,
)


def test_a_failed_batch_is_retried_one_by_one_in_arrival_order(
    target: TransformersTarget,
) -> None:
    """a (2 drafts), b (poisoned, 2 drafts), c (1 draft): after the batch of three fails,
    a, b and c run alone in that order; only b fails, and the failed pass is not counted."""

    async def scenario() -> tuple[list[Any], list[list[int]], VerificationService]:
        service, backend, _ = make_service(target)
        open_sessions(service, "a", "b", "c")
        tasks = [
            verify_later(service, s, d) for s, d in (("a", (1, 2)), ("b", (13, 2)), ("c", (3,)))
        ]
        await asyncio.sleep(0)
        await service.start()
        results = await settle(tasks)
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
        service, _, _ = make_service(target)
        open_sessions(service, "a", "b")
        tasks = [verify_later(service, "a", (1, 2)), verify_later(service, "b", (13,))]
        await asyncio.sleep(0)
        await service.start()
        results = await settle(tasks)
        await service.stop()
        return results

    a, b = asyncio.run(scenario())
    assert isinstance(a, VerifyReply) and a.outcome.result.num_drafted == 2
    assert isinstance(b, RequestError)
    assert (b.code, b.message) == (
        ErrorCode.INTERNAL,
        "verification failed in the target backend: RuntimeError('poisoned token 13')",
    )


def test_a_failure_settling_one_sessions_pass_fails_only_it_and_keeps_the_batch(
    target: TransformersTarget,
) -> None:
    """b's commit raises after the batched pass (its cache crop): a's reply is that pass's
    (one pass of two, not run again: a's round committed, a rerun was refused as
    "changed"), b's call fails alone, and b's same call again gets the target's tokens."""

    async def scenario() -> tuple[list[Any], Any, list[list[int]]]:
        service, backend, _ = make_service(target)
        crops = iter([target.crop, _raise])

        def crop(kv: Any, num_tokens: int) -> Any:  # a's, then b's raises
            return next(crops, target.crop)(kv, num_tokens)

        backend.crop = crop
        open_sessions(service, "a", "b")
        tasks = [verify_later(service, "a", (1, 2)), verify_later(service, "b", (3,))]
        await asyncio.sleep(0)
        await service.start()
        results = await settle(tasks)
        again = await asyncio.wait_for(service.verify(VerifyCall("b", len(PROMPT), (3,))), 10)
        await service.stop()
        return results, again, backend.passes

    (a, b), again, passes = asyncio.run(scenario())
    n = len(PROMPT)
    assert passes == [[n + 2, n + 1], [n + 1]]
    assert isinstance(a, VerifyReply) and a.batch_size == 2
    assert isinstance(b, RequestError) and (b.code, b.message) == (
        ErrorCode.INTERNAL,
        "verification failed after the target's pass: RuntimeError('crop failed')",
    )
    assert isinstance(again, VerifyReply)
    expected = target_greedy_decode(target, PROMPT, 2)
    assert again.outcome.committed_token_ids == expected[: len(again.outcome.committed_token_ids)]


def _raise(kv: Any, num_tokens: int) -> Any:
    raise RuntimeError("crop failed")


def test_force_is_set_exactly_when_every_live_session_is_queued(
    target: TransformersTarget,
) -> None:
    """One of two live sessions queued: not forced; both queued: forced."""

    async def scenario() -> list[bool]:
        policy = RecordingFcfs()
        service, _, _ = make_service(target, policy)
        open_sessions(service, "a", "b")
        await service.start()
        reply = await asyncio.wait_for(service.verify(VerifyCall("a", len(PROMPT), (1,))), 10)
        start = len(PROMPT) + reply.outcome.result.num_accepted + 1
        tasks = [
            asyncio.ensure_future(service.verify(VerifyCall("a", start, (1,)))),
            verify_later(service, "b", (1,)),
        ]
        await settle(tasks)
        await service.stop()
        return policy.forces

    assert asyncio.run(scenario()) == [False, True]


def test_a_waiting_policy_is_forced_after_batch_wait(target: TransformersTarget) -> None:
    async def scenario() -> tuple[Any, list[bool]]:
        policy = RecordingFcfs(wait=True)
        service, _, _ = make_service(target, policy, batch_wait_s=0.01)
        open_sessions(service, "a", "b")  # b never verifies
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
        service, backend, _ = make_service(target)
        backend.gate = threading.Event()
        open_sessions(service, "a", "b")
        await service.start()
        task = verify_later(service, "a", (1,))
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
        policy = RecordingFcfs(wait=True)
        service, _, _ = make_service(
            target,
            policy,
            batch_wait_s=60.0,
            engine_clock=engine_clock,
            session_timeout_s=0.04,
            max_sessions_per_client=3,
        )
        open_sessions(service, "a", "b", "c")
        await service.start()
        task = verify_later(service, "c", (1,))
        await asyncio.sleep(0)
        engine_clock.t = 100.0
        for _ in range(500):  # at most 5 s on a loaded machine
            await asyncio.sleep(0.01)
            if service.stats().num_expired_sessions:
                break
        stats = service.stats()
        open_sessions(service, "d", "e")  # a and b no longer count against client x
        await service.stop()
        (result,) = await settle([task])
        return stats.num_expired_sessions, stats.num_sessions, result

    expired, live, result = asyncio.run(scenario())
    assert (expired, live) == (2, 1)
    assert isinstance(result, RequestError) and result.code is ErrorCode.UNAVAILABLE


def test_centralized_generate_streams_greedy_tokens_and_closes(
    target: TransformersTarget,
) -> None:
    spec = SessionSpec("g", "x", PROMPT, SamplingParams(max_new_tokens=5))

    async def scenario() -> tuple[list[tuple[tuple[int, ...], bool]], int, list[Any], int]:
        service, _, _ = make_service(target)
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
