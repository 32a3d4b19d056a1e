"""A verify call whose caller's deadline has passed when its pass would start is not
verified: its session does not advance and a resend keeps its place. gRPC cancels an
expired call's handler only a moment after its deadline, and the pass could start in that
moment: it committed a round its caller had given up on, and a client that then drafted
another block for that round was refused (``FAILED_PRECONDITION``) without its tokens."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.wire.codec import pb, spec_to_proto
from edgespec.runtime.wire.grpc_common import pb_grpc
from tests.runtime.bad_cases import GREEDY, PROMPT
from tests.runtime.conftest import ServerFactory
from tests.runtime.server.gated_service import gated_service, outcome

N = len(PROMPT)


def test_a_call_whose_deadline_passed_while_queued_is_not_verified(
    target: TransformersTarget,
) -> None:
    """One call a batch: b (50 ms left) waits behind a's pass for 200 ms, then c; b is
    answered without a pass, its session where it was; b sent again keeps its arrival."""

    async def scenario() -> list[Any]:
        service, backend = gated_service(target, *"abc", config={"max_batch_size": 1})
        await service.start()
        a = asyncio.ensure_future(service.verify(VerifyCall("a", N, (20, 18))))
        assert await asyncio.to_thread(backend.entered.wait, 10)
        b_call = VerifyCall("b", N, (20,))
        b = asyncio.ensure_future(outcome(service.verify(b_call, time_left_s=0.05)))
        c = asyncio.ensure_future(service.verify(VerifyCall("c", N, (20, 18, 3))))
        await asyncio.sleep(0.2)
        backend.gate.set()
        expired = await b
        tokens = len(service.engine.session_tokens("b"))
        resent = await outcome(service.verify(b_call, time_left_s=5.0))
        results = [expired, tokens, resent, await c, await a, backend.passes]
        await service.stop()
        return results

    expired, tokens, resent, _, _, passes = asyncio.run(scenario())
    assert isinstance(expired, RequestError)
    assert (expired.code, expired.message) == (
        ErrorCode.UNAVAILABLE,
        "Deadline Exceeded before this verification's pass: nothing verified",
    )
    assert expired.past_deadline  # the drafter resends it, as a call gRPC timed out
    assert tokens == N
    assert isinstance(resent, VerifyReply) and resent.outcome.committed_token_ids
    assert passes == [[N + 2], [N + 3], [N + 1]]  # a, c, then b sent again (no pass before)
    assert resent.queue_s >= 0.2  # from its first sending: its arrival kept


def test_the_server_hands_each_call_its_time_left(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_server()
    service = server.service
    assert service is not None
    seen: list[float | None] = []
    verify = service.verify

    async def recording(call: VerifyCall, owner: str | None, time_left_s: float | None) -> Any:
        seen.append(time_left_s)
        return await verify(call, owner, time_left_s)

    monkeypatch.setattr(service, "verify", recording)
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = pb_grpc.VerificationStub(channel)
        stub.OpenSession(spec_to_proto(SessionSpec("s", "c", PROMPT, GREEDY)), timeout=10)
        stub.Verify(pb.VerifyRequest(session_id="s", prefix_len=N), timeout=30)
        stub.Verify(pb.VerifyRequest(session_id="s", prefix_len=N + 1))
    first, second = seen
    assert first is not None and 25 < first <= 31  # (gRPC rounds a timeout up)
    assert second is None  # no deadline
