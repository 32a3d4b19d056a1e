"""A session's calls across its lifecycle: a close fails its queued call (which never
reaches a later session under the same id), a verification whose caller went away during
its pass commits and its retry gets the same reply, a caller that went away before its
pass starts is never verified (a failed batch's re-runs included), and a retried open is
answered as the open it retries."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.reconnect import open_retrying
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import PROTOCOL_VERSION, SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import GREEDY, PROMPT, raises_request_error
from tests.runtime.conftest import ServerFactory
from tests.runtime.wrapped_target import WrappedTarget

N = len(PROMPT)


class _Gated(WrappedTarget):
    """The real target, recording each pass's item lengths; a pass waits for ``gate``
    (``entered`` is set once one does) and, with ``fail_batches``, one of several fails."""

    def __init__(self, inner: TransformersTarget) -> None:
        super().__init__(inner)
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.fail_batches = False
        self.passes: list[list[int]] = []

    def forward(self, items: Any) -> Any:
        self.entered.set()
        assert self.gate.wait(10)
        self.passes.append([len(item.new_token_ids) for item in items])
        if self.fail_batches and len(items) > 1:
            raise RuntimeError("a batch of several fails")
        return self._inner.forward(items)


def _service(target: TransformersTarget, *sids: str) -> tuple[VerificationService, _Gated]:
    backend = _Gated(target)
    engine = VerificationEngine(backend)
    service = VerificationService(engine, from_dict(ServerConfig, {}), FcfsBatching())
    for sid in sids:
        service.open_session(SessionSpec(sid, "x", PROMPT, GREEDY))
    return service, backend


async def _outcome(call: Any) -> VerifyReply | RequestError:
    try:
        return await asyncio.wait_for(call, 10)
    except RequestError as exc:
        return exc


def _error(result: object) -> tuple[ErrorCode, str]:
    assert isinstance(result, RequestError), result
    return result.code, result.message


async def _until_idle(service: VerificationService, num_batches: int) -> None:
    for _ in range(1000):  # at most 10 s on a loaded machine
        if service.stats().num_batches >= num_batches:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"fewer than {num_batches} batches ran")


def test_a_retry_of_a_round_whose_caller_went_away_mid_pass_gets_its_reply(
    target: TransformersTarget,
) -> None:
    """a's caller goes away while its pass runs: the round commits, a's session stays in
    flight until the batch ends, then the same round again gets the committed reply
    (without a second pass) and another block for it a FAILED_PRECONDITION."""
    call = VerifyCall("a", N, (20, 18))

    async def scenario() -> list[Any]:
        service, backend = _service(target, "a")
        await service.start()
        first = asyncio.ensure_future(service.verify(call))
        assert await asyncio.to_thread(backend.entered.wait, 10)
        first.cancel()
        during = await _outcome(service.verify(call))
        backend.gate.set()
        await _until_idle(service, 1)
        retry = await _outcome(service.verify(call))
        other = await _outcome(service.verify(VerifyCall("a", N, (5,))))
        tokens = service.engine.session_tokens("a")
        await service.stop()
        return [during, retry, other, tokens, backend.passes]

    during, retry, other, tokens, passes = asyncio.run(scenario())
    assert _error(during) == (
        ErrorCode.FAILED_PRECONDITION,
        "session 'a' already has a verification in flight",
    )
    assert isinstance(retry, VerifyReply)
    committed = retry.outcome.committed_token_ids
    assert committed == target_greedy_decode(target, PROMPT, len(committed))
    assert tokens == (*PROMPT, *committed)
    assert (retry.queue_s, retry.verify_s, retry.batch_size) == (0.0, 0.0, 0)
    assert passes == [[N + 2]]  # one pass: the retry is answered from the committed round
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
        b = await _outcome(tasks[1])
        tokens = service.engine.session_tokens("a")
        again = await _outcome(service.verify(VerifyCall("a", N, (1, 2))))
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
        closed = await _outcome(old)
        service.open_session(SessionSpec("a", "y", other, GREEDY))
        new = asyncio.ensure_future(service.verify(VerifyCall("a", len(other), ())))
        await asyncio.sleep(0)
        backend.gate.set()
        reply = await _outcome(new)
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


def test_a_retried_open_whose_first_reply_was_lost_succeeds(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    """The first OpenSession's reply comes after the client's deadline; open_retrying's
    second attempt (the same spec, same client) is answered as that open, once."""
    server = make_server()
    service = server.service
    assert service is not None
    open_session = service.engine.open_session
    opened: list[SessionSpec] = []

    def late(spec: SessionSpec) -> None:
        opened.append(spec)
        if len(opened) == 1:
            time.sleep(0.6)
        open_session(spec)

    service.engine.open_session = late  # type: ignore[method-assign]
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}", timeout_s=0.3)
    spec = SessionSpec("s1", "c", PROMPT, SamplingParams(max_new_tokens=4))
    open_retrying(verifier, spec, time.monotonic, 5.0, 0.05)
    assert opened == [spec]  # the retry opened nothing more
    assert (verifier.stats().num_sessions, service.metrics().num_sessions_opened) == (1, 1)
    reply = verifier.verify(VerifyCall("s1", N, ()))
    assert reply.outcome.committed_token_ids == target_greedy_decode(target, PROMPT, 1)
    raises_request_error(  # once it has verified a round, an open is no retry
        ErrorCode.INVALID_ARGUMENT, "session 's1' already exists", verifier.open, spec
    )


def test_only_an_identical_open_by_the_same_owner_is_a_retry(target: TransformersTarget) -> None:
    service, _ = _service(target)
    spec = SessionSpec("s", "x", PROMPT, GREEDY)
    service.open_session(spec, owner="tok")
    service.open_session(spec, owner="tok")
    exists = "session 's' already exists"
    other_prompt = SessionSpec("s", "x", (1, 2), GREEDY)
    for again, owner in ((other_prompt, "tok"), (spec, "other-tok")):
        raises_request_error(ErrorCode.INVALID_ARGUMENT, exists, service.open_session, again, owner)
    assert service.stats().num_sessions == 1


def test_a_centralized_generate_does_not_adopt_an_unused_session_of_its_id(
    target: TransformersTarget,
) -> None:
    """Generate opens a session of its own and closes it at its end: an open session of the
    same id and spec, not yet verified, looked like a retry of its open, was adopted and
    then closed under its owner."""
    service, _ = _service(target)
    spec = SessionSpec("s", "x", PROMPT, GREEDY)
    service.open_session(spec, owner="tok")

    async def generate() -> list[Any]:
        return [chunk async for chunk in service.generate(spec, False, 0, owner="tok")]

    raises_request_error(
        ErrorCode.INVALID_ARGUMENT, "session 's' already exists", asyncio.run, generate()
    )
    assert service.stats().num_sessions == 1  # the owner's session is still there
    service.open_session(spec, owner="tok")  # and still unused: its open retried is no error
