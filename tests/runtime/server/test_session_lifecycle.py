"""A session's calls across its lifecycle: a close fails its queued call (which never
reaches a later session under the same id), a verification whose caller went away during
its pass commits (a resend meanwhile takes the pass over, a retry after it gets the same
reply), and a caller that went away before its pass starts is never verified (a failed
batch's re-runs included). Retried opens: test_open_retries.py."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import PROTOCOL_VERSION, SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import GREEDY, PROMPT
from tests.runtime.conftest import ServerFactory
from tests.runtime.server.gated_service import gated_service as _service
from tests.runtime.server.gated_service import outcome

N = len(PROMPT)


def _error(result: object) -> tuple[ErrorCode, str]:
    assert isinstance(result, RequestError), result
    return result.code, result.message


async def _until_idle(service: VerificationService, num_batches: int) -> None:
    for _ in range(1000):  # at most 10 s on a loaded machine
        if service.stats().num_batches >= num_batches:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"fewer than {num_batches} batches ran")


def test_a_resend_of_a_round_whose_caller_went_away_mid_pass_takes_the_pass_over(
    target: TransformersTarget,
) -> None:
    """a's caller goes away while its pass runs: the round commits; the same call sent again
    meanwhile takes the pass over and gets its reply when it ends (another block for it is
    refused: the session is in flight); the same round once more after the batch gets the
    committed reply (without a second pass) and another block a FAILED_PRECONDITION."""
    call = VerifyCall("a", N, (20, 18))

    async def scenario() -> list[Any]:
        service, backend = _service(target, "a")
        await service.start()
        first = asyncio.ensure_future(service.verify(call))
        assert await asyncio.to_thread(backend.entered.wait, 10)
        first.cancel()
        blocked = await outcome(service.verify(VerifyCall("a", N, (5,))))
        resent = asyncio.ensure_future(service.verify(call))
        await asyncio.sleep(0.05)
        backend.gate.set()
        during = await outcome(resent)
        retry = await outcome(service.verify(call))
        other = await outcome(service.verify(VerifyCall("a", N, (5,))))
        tokens = service.engine.session_tokens("a")
        await service.stop()
        return [blocked, during, retry, other, tokens, backend.passes]

    blocked, during, retry, other, tokens, passes = asyncio.run(scenario())
    assert _error(blocked) == (
        ErrorCode.FAILED_PRECONDITION,
        "session 'a' already has a verification in flight",
    )
    assert isinstance(during, VerifyReply) and isinstance(retry, VerifyReply)
    committed = during.outcome.committed_token_ids
    assert committed == target_greedy_decode(target, PROMPT, len(committed))
    assert tokens == (*PROMPT, *committed)
    assert during.batch_size == 1 and during.verify_s >= 0.05  # the pass it took over
    assert retry.outcome == during.outcome
    assert (retry.queue_s, retry.verify_s, retry.batch_size) == (0.0, 0.0, 0)
    assert passes == [[N + 2]]  # one pass: the resend and the retry are answered from it
    assert _error(other) == (
        ErrorCode.FAILED_PRECONDITION,
        f"session 'a' already committed its round at prefix_len {N} with another draft "
        f"block; it has {len(tokens)} committed tokens",
    )


def test_a_caller_gone_before_a_failed_batch_reruns_is_never_verified(
    target: TransformersTarget,
) -> None:
    """The pass of a and b fails; a's caller went away during it, so only b runs again:
    a's session does not advance and its retry is a fresh verification."""

    async def scenario() -> list[Any]:
        service, backend = _service(target, "a", "b")
        backend.fail_batches = True
        tasks = [
            asyncio.ensure_future(service.verify(VerifyCall(sid, N, draft)))
            for sid, draft in (("a", (1, 2)), ("b", (3,)))
        ]
        await asyncio.sleep(0)  # both queued: one batch
        await service.start()
        assert await asyncio.to_thread(backend.entered.wait, 10)
        tasks[0].cancel()
        backend.gate.set()
        b = await outcome(tasks[1])
        tokens = service.engine.session_tokens("a")
        again = await outcome(service.verify(VerifyCall("a", N, (1, 2))))
        await service.stop()
        return [b, tokens, again, backend.passes]

    b, tokens, again, passes = asyncio.run(scenario())
    assert isinstance(b, VerifyReply) and b.outcome.result.num_drafted == 1
    assert tokens == PROMPT
    assert isinstance(again, VerifyReply) and again.batch_size == 1
    assert passes == [[N + 2, N + 1], [N + 1], [N + 2]]


def test_closing_a_session_mid_pass_fails_its_call_and_frees_its_id(
    target: TransformersTarget,
) -> None:
    """a closes while its pass runs: its caller gets NOT_FOUND at once, and a new session
    under the id is verified from its own prompt, untouched by the old pass."""
    other = (40, 41, 42, 43)

    async def scenario() -> list[Any]:
        service, backend = _service(target, "a")
        await service.start()
        old = asyncio.ensure_future(service.verify(VerifyCall("a", N, (1, 2))))
        assert await asyncio.to_thread(backend.entered.wait, 10)
        assert service.close_session("a")
        closed = await outcome(old)
        service.open_session(SessionSpec("a", "y", other, GREEDY))
        new = asyncio.ensure_future(service.verify(VerifyCall("a", len(other), ())))
        await asyncio.sleep(0)
        backend.gate.set()
        reply = await outcome(new)
        tokens = service.engine.session_tokens("a")
        await service.stop()
        return [closed, reply, tokens]

    closed, reply, tokens = asyncio.run(scenario())
    assert _error(closed) == (
        ErrorCode.NOT_FOUND,
        "session 'a' was closed during this verification: its result is dropped",
    )
    assert isinstance(reply, VerifyReply)
    assert tokens == (*other, *target_greedy_decode(target, other, 1))
    assert reply.outcome.committed_token_ids == tokens[len(other) :]


def test_a_call_admitted_for_a_closed_session_never_touches_its_successor(
    target: TransformersTarget,
) -> None:
    """The engine binds a call to the session it was admitted for, not to its id."""
    engine = VerificationEngine(target)
    engine.open_session(SessionSpec("q", "a", PROMPT, GREEDY))
    serial = engine.session_serial("q")
    engine.close_session("q")
    engine.open_session(SessionSpec("q", "b", (40, 41, 42), GREEDY))
    (result,) = engine.verify_batch([VerifyCall("q", 3, (7,))], [serial])
    assert _error(result) == (
        ErrorCode.NOT_FOUND,
        "session 'q' was closed before this verification ran",
    )
    assert engine.session_tokens("q") == (40, 41, 42)
    assert engine.counters().num_verifications == 0


def test_closing_a_session_fails_its_queued_call_for_good(
    make_server: ServerFactory, target: TransformersTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tenant A's call for q waits behind a running batch when A closes q and tenant B opens
    q with another prompt: A's call fails NOT_FOUND at once, B's session is B's alone."""
    gate, entered = threading.Event(), threading.Event()
    forward = target.forward

    def gated(items: Any) -> Any:
        entered.set()
        assert gate.wait(10)
        return forward(items)

    monkeypatch.setattr(target, "forward", gated)
    server = make_server(auth_tokens=["tok-a", "tok-b"])
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    a, b = (("authorization", "Bearer tok-a"),), (("authorization", "Bearer tok-b"),)

    def opened(sid: str, prompt: tuple[int, ...], who: Any) -> None:
        sampling = pb.Sampling(max_new_tokens=8)
        request = pb.OpenSessionRequest(protocol_version=PROTOCOL_VERSION, session_id=sid,
                                        client_id="c", prompt_token_ids=list(prompt),
                                        sampling=sampling)  # fmt: skip
        stub.OpenSession(request, metadata=who, timeout=10)

    def verify(sid: str, draft: list[int], who: Any) -> Any:
        request = pb.VerifyRequest(session_id=sid, prefix_len=N, draft_token_ids=draft)
        try:
            return stub.Verify(request, metadata=who, timeout=10)
        except grpc.RpcError as exc:
            return exc.code(), exc.details()

    opened("busy", PROMPT, a)
    opened("q", PROMPT, a)
    pool = ThreadPoolExecutor(2)
    try:
        busy = pool.submit(verify, "busy", [], a)
        assert entered.wait(10)  # busy's pass is running
        stale = pool.submit(verify, "q", [7], a)
        while stub.Stats(pb.StatsRequest(), metadata=a).queue_depth < 1:
            time.sleep(0.01)
        stub.CloseSession(pb.CloseSessionRequest(session_id="q"), metadata=a, timeout=10)
        assert stale.result(timeout=5) == (
            grpc.StatusCode.NOT_FOUND,
            "session 'q' was closed while this verification was queued: nothing was verified",
        )
    finally:
        gate.set()
    other = (40, 41, 42, 43, 44, 45, 46, 47)
    opened("q", other, b)
    reply = verify("q", [], b)
    assert tuple(reply.committed_token_ids) == target_greedy_decode(target, other, 1)
    assert busy.result(timeout=10).num_drafted == 0
    pool.shutdown()
