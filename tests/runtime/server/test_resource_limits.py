"""Resource limits and lifecycles: idle clients, restarts, session, message, queue and
context limits, protocol versions, cancelled verifications."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import grpc
import numpy as np
import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import GREEDY, PROMPT, raises_request_error
from tests.runtime.conftest import ServerFactory


def test_idle_client_kv_is_freed(make_server: ServerFactory) -> None:
    server = make_server(session_timeout_s=0.2)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    verifier.open(SessionSpec("idle", "gone", PROMPT, GREEDY))
    verifier.verify(VerifyCall("idle", len(PROMPT), (1, 2, 3)))
    assert verifier.stats().num_cached_tokens > 0
    deadline = time.monotonic() + 5
    while verifier.stats().num_sessions and time.monotonic() < deadline:
        time.sleep(0.05)
    stats = verifier.stats()
    assert (stats.num_sessions, stats.num_cached_tokens, stats.num_expired_sessions) == (0, 0, 1)
    raises_request_error(
        ErrorCode.NOT_FOUND,
        "unknown session 'idle'",
        verifier.verify,
        VerifyCall("idle", len(PROMPT) + 1, (1,)),
    )


def test_server_restart_mid_generation(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    first = make_server()
    port = first.port
    restarted: list[Any] = []
    chunks: list[tuple[int, ...]] = []

    def on_tokens(tokens: tuple[int, ...]) -> None:
        chunks.append(tokens)
        if len(chunks) == 3:  # kill the server after the third round, start a new one
            first.stop(grace_s=0)
            restarted.append(make_server(port=port))

    sampling = SamplingParams(max_new_tokens=30)
    result = generate(
        RemoteVerifier(f"127.0.0.1:{port}"),
        TransformersDraft(draft_model),
        PROMPT,
        sampling,
        DraftOptions("restart"),
        on_tokens=on_tokens,
    )
    assert restarted and result.num_reconnects >= 1
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 30)
    # the new server only ever saw the reopened session: prompt + committed tokens so far
    assert RemoteVerifier(f"127.0.0.1:{port}").stats().num_cache_misses == 1


def test_session_and_message_limits(make_server: ServerFactory) -> None:
    server = make_server(max_sessions=2, max_message_bytes=2048)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    verifier.open(SessionSpec("a", "x", PROMPT, GREEDY))
    verifier.open(SessionSpec("b", "x", PROMPT, GREEDY))
    raises_request_error(
        ErrorCode.RESOURCE_EXHAUSTED,
        "session limit reached (2 open sessions)",
        verifier.open,
        SessionSpec("c", "x", PROMPT, GREEDY),
    )
    verifier.close("a")
    verifier.open(SessionSpec("c", "x", PROMPT, GREEDY))
    huge = VerifyCall("c", len(PROMPT), (1,) * 4, np.full((4, 200), 0.005, np.float32))
    with pytest.raises(RequestError) as info:
        verifier.verify(huge)
    # the server's gRPC refuses it (RESOURCE_EXHAUSTED); the client says what no retry fixes
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert re.fullmatch(
        r"the request is \d{4} bytes, over the server's max_message_bytes \(2048\): shorten "
        r"the prompt or the draft block, or raise the server's max_message_bytes",
        info.value.message,
    ), info.value.message
    assert verifier.health()  # still up
    assert grpc.StatusCode.RESOURCE_EXHAUSTED.name == "RESOURCE_EXHAUSTED"
    assert pb.MODE_FUSED == 1


def test_queue_depth_limit(target: TransformersTarget) -> None:
    config = from_dict(ServerConfig, {"max_queue_depth": 1})

    async def scenario() -> list[Any]:
        service = VerificationService(VerificationEngine(target), config, FcfsBatching())
        await service.start()
        for sid in ("a", "b"):
            service.open_session(SessionSpec(sid, "x", PROMPT, GREEDY))
        calls = [service.verify(VerifyCall(sid, len(PROMPT), (1, 2))) for sid in ("a", "b")]
        results = await asyncio.gather(*calls, return_exceptions=True)
        again = await service.verify(VerifyCall("b", len(PROMPT), (1, 2)))  # drained: accepted
        await service.stop()
        return [*results, again]

    first, second, again = asyncio.run(scenario())
    assert first.outcome.result.num_drafted == 2
    assert isinstance(second, RequestError)
    assert (second.code, second.message) == (
        ErrorCode.RESOURCE_EXHAUSTED,
        "verification queue is full (1 waiting)",
    )
    assert again.outcome.result.num_drafted == 2


def test_protocol_version_mismatch(make_server: ServerFactory) -> None:
    server = make_server()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    stub = pb_grpc.VerificationStub(channel)
    request = pb.OpenSessionRequest(
        protocol_version=99,
        session_id="v",
        prompt_token_ids=[1],
        sampling=pb.Sampling(max_new_tokens=4),
    )
    with pytest.raises(grpc.RpcError) as info:
        stub.OpenSession(request)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert info.value.details() == "protocol version 99 not supported; server speaks 5"


def test_cancelled_verification_does_not_advance_the_session(target: TransformersTarget) -> None:
    config = from_dict(ServerConfig, {})

    async def scenario() -> tuple[int, int, int]:
        service = VerificationService(VerificationEngine(target), config, FcfsBatching())
        service.open_session(SessionSpec("a", "x", PROMPT, GREEDY))
        task = asyncio.create_task(service.verify(VerifyCall("a", len(PROMPT), (1, 2))))
        await asyncio.sleep(0)  # enqueued, scheduler not started yet
        depth = service.stats().queue_depth
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await service.start()
        reply = await service.verify(VerifyCall("a", len(PROMPT), (1, 2)))  # same prefix: valid
        await service.stop()
        return depth, service.stats().queue_depth, reply.batch_size

    assert asyncio.run(scenario()) == (1, 0, 1)


def test_context_limit(target: TransformersTarget) -> None:
    engine = VerificationEngine(target)
    assert target.max_context_tokens == 4096
    spec = SessionSpec("long", "x", (1,) * 4000, SamplingParams(max_new_tokens=100))
    raises_request_error(
        ErrorCode.INVALID_ARGUMENT,
        "prompt (4000 tokens) + max_new_tokens (100) exceeds the target's context of 4096",
        engine.open_session,
        spec,
    )


def test_draft_block_beyond_the_context_is_refused(target: TransformersTarget) -> None:
    """A session that fits still cannot send a block running past the target's context."""
    engine = VerificationEngine(target)
    engine.open_session(SessionSpec("edge", "x", (1,) * 4090, SamplingParams(max_new_tokens=6)))
    raises_request_error(
        ErrorCode.INVALID_ARGUMENT,
        "prefix (4090) + draft (7) exceeds the target's context of 4096",
        engine.validate,
        VerifyCall("edge", 4090, (1,) * 7),
        32,
    )


def test_one_client_cannot_take_every_session(make_server: ServerFactory) -> None:
    server = make_server(max_sessions=10, max_sessions_per_client=2)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    for i in range(2):
        verifier.open(SessionSpec(f"greedy{i}", "hog", PROMPT, GREEDY))
    raises_request_error(
        ErrorCode.RESOURCE_EXHAUSTED,
        "client_id 'hog' already has 2 open sessions (max_sessions_per_client)",
        verifier.open,
        SessionSpec("greedy2", "hog", PROMPT, GREEDY),
    )
    verifier.open(SessionSpec("polite", "other", PROMPT, GREEDY))  # others still get in
    verifier.close("greedy0")
    verifier.open(SessionSpec("greedy3", "hog", PROMPT, GREEDY))  # a closed slot is free
