"""Request rules from docs/RUNTIME.md's validation table not covered elsewhere: each bad
case with its exact status and message."""

from __future__ import annotations

import asyncio

import grpc
import numpy as np
import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import PROTOCOL_VERSION, SessionSpec, VerifyCall
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.codec import call_from_proto, pb
from edgespec.runtime.wire.grpc_common import pb_grpc
from tests.runtime.conftest import ServerFactory

PROMPT = (3, 1, 4, 1, 5)


@pytest.mark.parametrize(
    ("session_id", "max_new_tokens", "message"),
    [
        ("", 4, "session_id is empty"),
        ("s", 0, "sampling: max_new_tokens must be >= 1, got 0"),
    ],
)
def test_open_session_fields(
    make_server: ServerFactory, session_id: str, max_new_tokens: int, message: str
) -> None:
    server = make_server()
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    request = pb.OpenSessionRequest(
        protocol_version=PROTOCOL_VERSION,
        session_id=session_id,
        prompt_token_ids=list(PROMPT),
        sampling=pb.Sampling(max_new_tokens=max_new_tokens),
    )
    with pytest.raises(grpc.RpcError) as info:
        stub.OpenSession(request)
    assert (info.value.code(), info.value.details()) == (grpc.StatusCode.INVALID_ARGUMENT, message)


def _raises(code: ErrorCode, message: str, fn: object, *args: object) -> None:
    with pytest.raises(RequestError) as info:
        fn(*args)  # type: ignore[operator]
    assert (info.value.code, info.value.message) == (code, message)


def test_session_state_rules(target: TransformersTarget) -> None:
    engine = VerificationEngine(target)
    engine.open_session(SessionSpec("done", "c", PROMPT, SamplingParams(max_new_tokens=1)))
    engine.verify_batch([VerifyCall("done", len(PROMPT), ())])  # its one token: finished
    _raises(
        ErrorCode.FAILED_PRECONDITION,
        "session 'done' already finished",
        engine.validate,
        VerifyCall("done", len(PROMPT) + 1, (1,)),
        8,
    )
    sampled = SamplingParams(temperature=0.7, max_new_tokens=8)
    engine.open_session(SessionSpec("hot", "c", PROMPT, sampled))
    probs = np.full((2, 64), 1 / 64, dtype=np.float32)
    _raises(
        ErrorCode.INVALID_ARGUMENT,
        "a draft tree carries no draft_probs: its nodes are proposed for certain",
        engine.validate,
        VerifyCall("hot", len(PROMPT), (1, 2), probs, (-1, -1)),
        8,
    )


def test_one_verification_in_flight_per_session(target: TransformersTarget) -> None:
    async def scenario() -> BaseException | None:
        service = VerificationService(
            VerificationEngine(target), from_dict(ServerConfig, {}), FcfsBatching()
        )
        service.open_session(SessionSpec("s", "c", PROMPT, SamplingParams(max_new_tokens=8)))
        first = asyncio.ensure_future(service.verify(VerifyCall("s", len(PROMPT), (1,))))
        await asyncio.sleep(0)  # queued, the scheduler not started
        try:
            await service.verify(VerifyCall("s", len(PROMPT), (2,)))
        except RequestError as exc:
            error: BaseException | None = exc
        else:
            error = None
        await service.start()
        await first
        await service.stop()
        return error

    error = asyncio.run(scenario())
    assert isinstance(error, RequestError)
    assert (error.code, error.message) == (
        ErrorCode.FAILED_PRECONDITION,
        "session 's' already has a verification in flight",
    )


def test_wire_shapes_of_draft_probs_and_payloads() -> None:
    bad_probs = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1, 2])
    bad_probs.draft_probs.extend([0.5, 0.5, 1.0])
    _raises(
        ErrorCode.INVALID_ARGUMENT,
        "draft_probs has 3 values, not a multiple of 2 tokens",
        call_from_proto,
        bad_probs,
        16,
        32,
    )
    twice = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1])
    for _ in range(2):
        twice.payloads.add(name="csi", shape=[1], values=[0.0])
    _raises(
        ErrorCode.INVALID_ARGUMENT,
        "payload name 'csi' is empty or repeated",
        call_from_proto,
        twice,
        16,
        32,
    )


def test_per_client_queue_quota(target: TransformersTarget) -> None:
    config = from_dict(ServerConfig, {"max_queued_per_client": 1})

    async def scenario() -> BaseException | None:
        service = VerificationService(VerificationEngine(target), config, FcfsBatching())
        for sid, client in (("a1", "alice"), ("a2", "alice"), ("b1", "bob")):
            service.open_session(SessionSpec(sid, client, PROMPT, SamplingParams(max_new_tokens=8)))
        first = asyncio.ensure_future(service.verify(VerifyCall("a1", len(PROMPT), (1,))))
        other = asyncio.ensure_future(service.verify(VerifyCall("b1", len(PROMPT), (1,))))
        await asyncio.sleep(0)  # both queued, the scheduler not started
        error: BaseException | None = None
        try:
            await service.verify(VerifyCall("a2", len(PROMPT), (1,)))
        except RequestError as exc:
            error = exc
        await service.start()
        await asyncio.gather(first, other)  # bob was not held back by alice's quota
        await service.stop()
        return error

    error = asyncio.run(scenario())
    assert isinstance(error, RequestError)
    assert (error.code, error.message) == (
        ErrorCode.RESOURCE_EXHAUSTED,
        "this client already has 1 verifications queued (max_queued_per_client)",
    )
