"""A client's grouped verify calls (runtime/server/batch_groups.py, through the service's
scheduler, on the real tiny target): held out of the batching policy's view until the
whole group is there, then verified in one pass; an incomplete group released
``group_wait_s`` after its first call; a held call whose caller goes away or whose session
closes; another client's calls never wait for a group; the ``force`` rule and the queue
depth with a held call. Server time is the hand-set clock; group timers are real time."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import pytest

from edgespec.config import ConfigError, from_dict
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.service import VerificationService
from tests.runtime.bad_cases import GREEDY, PROMPT
from tests.runtime.server.handling_service import (
    RecordingFcfs,
    make_service,
    open_sessions,
    settle,
    verify_later,
)


def _grouped(service: VerificationService, sid: str, batch_id: str, num_calls: int) -> Any:
    call = VerifyCall(sid, len(PROMPT), (1, 2), batch_id=batch_id, batch_calls=num_calls)
    return asyncio.ensure_future(service.verify(call))


async def _spin(num_turns: int = 50) -> None:
    """Let the loop run (the scheduler would dispatch a shown call within these turns)."""
    for _ in range(num_turns):
        await asyncio.sleep(0)
    await asyncio.sleep(0.02)


def test_a_group_is_held_until_complete_then_verified_in_one_pass(
    target: TransformersTarget,
) -> None:
    async def scenario() -> tuple[list[list[int]], list[Any], tuple[int, int]]:
        service, backend, _ = make_service(target, group_wait_s=30.0)
        open_sessions(service, "a", "b", "c")
        await service.start()
        first = [_grouped(service, "a", "g", 3), _grouped(service, "b", "g", 3)]
        await _spin()
        held = (len(backend.passes), service.stats().queue_depth)  # held calls are queued
        replies = await settle([*first, _grouped(service, "c", "g", 3)])
        await service.stop()
        return backend.passes, replies, held

    passes, replies, held = asyncio.run(scenario())
    assert held == (0, 2)
    assert passes == [[len(PROMPT) + 2] * 3]
    assert [r.batch_size for r in replies if isinstance(r, VerifyReply)] == [3, 3, 3]


def test_an_incomplete_group_is_released_group_wait_s_after_its_first_call(
    target: TransformersTarget,
) -> None:
    async def scenario() -> tuple[list[list[int]], list[Any], float]:
        service, backend, _ = make_service(target, group_wait_s=0.3)
        open_sessions(service, "a", "b", "c")
        await service.start()
        start = time.monotonic()
        replies = await settle([_grouped(service, "a", "g", 3), _grouped(service, "b", "g", 3)])
        waited_s = time.monotonic() - start
        await service.stop()
        return backend.passes, replies, waited_s

    passes, replies, waited_s = asyncio.run(scenario())
    assert passes == [[len(PROMPT) + 2] * 2]
    assert [r.batch_size for r in replies if isinstance(r, VerifyReply)] == [2, 2]
    assert 0.3 <= waited_s < 3.0


def test_a_held_call_whose_caller_goes_away_leaves_without_advancing_its_session(
    target: TransformersTarget,
) -> None:
    async def scenario() -> tuple[tuple[int, set[str]], list[list[int]], tuple[int, ...]]:
        service, backend, _ = make_service(target, group_wait_s=30.0)
        open_sessions(service, "a", "b")
        await service.start()
        task = _grouped(service, "a", "g", 2)
        await _spin()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        left = (service.stats().queue_depth, service._scheduler.in_flight)
        await settle([verify_later(service, "b", (1,))])  # the loop serves the others
        tokens = service.engine.session_tokens("a")
        await service.stop()
        return left, backend.passes, tokens

    left, passes, tokens = asyncio.run(scenario())
    assert left == (0, set())
    assert passes == [[len(PROMPT) + 1]]
    assert tokens == PROMPT


def test_a_held_call_whose_session_closes_fails_not_found(target: TransformersTarget) -> None:
    async def scenario() -> tuple[Any, list[list[int]], int]:
        service, backend, _ = make_service(target, group_wait_s=30.0)
        open_sessions(service, "a", "b")
        await service.start()
        task = _grouped(service, "a", "g", 2)
        await _spin()
        service.close_session("a")
        (result,) = await settle([task])
        depth = service.stats().queue_depth
        await service.stop()
        return result, backend.passes, depth

    result, passes, depth = asyncio.run(scenario())
    assert isinstance(result, RequestError)
    assert (result.code, result.message) == (
        ErrorCode.NOT_FOUND,
        "session 'a' was closed while this verification was queued: nothing was verified",
    )
    assert (passes, depth) == ([], 0)


def test_another_clients_calls_never_wait_for_a_held_group(target: TransformersTarget) -> None:
    """x's group of 2 is held; y's ungrouped call, and y's call naming the same batch_id
    (a group of y's own), are verified while it waits; x's second call completes it."""

    async def scenario() -> tuple[list[Any], bool, list[list[int]], list[Any]]:
        service, backend, _ = make_service(target, group_wait_s=30.0)
        open_sessions(service, "a", "b")
        for sid in ("c", "d"):
            service.open_session(SessionSpec(sid, "y", PROMPT, GREEDY))
        await service.start()
        held = _grouped(service, "a", "g", 2)
        await _spin()
        others = await settle([verify_later(service, "c", (1,))])
        others += await settle([_grouped(service, "d", "g", 1)])
        still_held = not held.done()
        group = await settle([held, _grouped(service, "b", "g", 2)])
        await service.stop()
        return others, still_held, backend.passes, group

    others, still_held, passes, group = asyncio.run(scenario())
    assert [r.batch_size for r in others if isinstance(r, VerifyReply)] == [1, 1]
    assert still_held
    assert passes == [[len(PROMPT) + 1], [len(PROMPT) + 2], [len(PROMPT) + 2] * 2]
    assert [r.batch_size for r in group if isinstance(r, VerifyReply)] == [2, 2]


def test_a_held_call_is_not_waiting_for_the_force_rule(target: TransformersTarget) -> None:
    """A policy that waits unless forced, two live sessions: while a's call is held the
    policy is not asked at all; b's call completes the group and both are shown, forced."""

    async def scenario() -> tuple[list[bool], list[bool], list[list[int]]]:
        policy = RecordingFcfs(wait=True)
        service, backend, _ = make_service(target, policy, batch_wait_s=60.0, group_wait_s=30.0)
        open_sessions(service, "a", "b")
        await service.start()
        held = _grouped(service, "a", "g", 2)
        await _spin()
        while_held = list(policy.forces)
        await settle([held, _grouped(service, "b", "g", 2)])
        await service.stop()
        return while_held, policy.forces, backend.passes

    while_held, forces, passes = asyncio.run(scenario())
    assert (while_held, forces) == ([], [True])
    assert passes == [[len(PROMPT) + 2] * 2]


def test_a_call_announcing_another_count_than_its_group_is_refused(
    target: TransformersTarget,
) -> None:
    """Counted as a refusal in the service's own counters, as its other checks' refusals
    are (over gRPC the servicer counted it; in process it was not counted)."""

    async def scenario() -> tuple[Any, int, int, dict[str, int]]:
        service, _, _ = make_service(target, group_wait_s=0.05)
        open_sessions(service, "a", "b")
        await service.start()
        first = _grouped(service, "a", "g", 2)
        await _spin()
        (refused,) = await settle([_grouped(service, "b", "g", 3)])
        await settle([first])
        stats = service.stats()
        by_code = dict(service.metrics().rejected_by_code)
        await service.stop()
        return refused, stats.queue_depth, stats.num_rejected, by_code

    refused, depth, num_rejected, by_code = asyncio.run(scenario())
    assert isinstance(refused, RequestError)
    assert (refused.code, refused.message) == (
        ErrorCode.INVALID_ARGUMENT,
        "batch_calls 3 differs from the 2 of the held calls of batch_id 'g' (a batch's calls "
        "share both)",
    )
    assert depth == 0
    assert (num_rejected, by_code["INVALID_ARGUMENT"], refused.counted) == (1, 1, True)


def test_group_wait_s_is_a_finite_number_at_least_0() -> None:
    """Its default, 0 (a group is released on the loop's next turn), and the refusals."""
    assert ServerConfig().group_wait_s == 0.05
    assert from_dict(ServerConfig, {"group_wait_s": 0}).group_wait_s == 0
    for bad in (-0.001, math.inf, math.nan):
        with pytest.raises(ConfigError) as info:
            from_dict(ServerConfig, {"group_wait_s": bad})
        assert str(info.value) == (
            f"config field 'group_wait_s': must be a finite number >= 0, got {bad}"
        )


def test_another_token_naming_a_groups_client_id_and_batch_id_stays_out_of_it(
    target: TransformersTarget,
) -> None:
    """With auth on, a group is its token's: token B's call naming A's ``client_id`` and
    ``batch_id`` with another count made A's calls ``INVALID_ARGUMENT`` (or joined A's
    group, so that A's group left a call behind). Now A's two calls are one pass, B's
    call a group of its own, released after ``group_wait_s``."""

    async def scenario() -> tuple[list[list[int]], list[Any]]:
        service, backend, _ = make_service(target, group_wait_s=0.3)
        for sid, owner in (("a1", "alpha"), ("a2", "alpha"), ("b1", "beta")):
            service.open_session(SessionSpec(sid, "x", PROMPT, GREEDY), owner)
        await service.start()

        def grouped(sid: str, owner: str, num_calls: int) -> Any:
            call = VerifyCall(sid, len(PROMPT), (1, 2), batch_id="g", batch_calls=num_calls)
            return asyncio.ensure_future(service.verify(call, owner))

        intruder = grouped("b1", "beta", 3)
        await _spin()
        replies = await settle([grouped("a1", "alpha", 2), grouped("a2", "alpha", 2), intruder])
        await service.stop()
        return backend.passes, replies

    passes, replies = asyncio.run(scenario())
    assert [r.batch_size if isinstance(r, VerifyReply) else r for r in replies] == [2, 2, 1]
    assert passes == [[len(PROMPT) + 2] * 2, [len(PROMPT) + 2]]
