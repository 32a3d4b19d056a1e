"""Routing over hand-built stats sources, the client's gRPC error mapping and what each
``RemoteVerifier`` call sends (metadata, deadline, mode) through a stand-in stub: no
server, no model."""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc
import numpy as np
import pytest

from edgespec.core.types import SamplingParams, ServerLoad, VerifyResult
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.routing import JoinShortestQueueRouting
from edgespec.runtime.edge.reconnect import RETRY_BACKOFF_S, Cancelled
from edgespec.runtime.edge.routing import StatsSource, route, server_loads
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    FusedCall,
    FusedRound,
    FusedRunEnd,
    ServerStats,
    SessionSpec,
    VerifyOutcome,
    VerifyReply,
)
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.fused_codec import fused_round_to_proto
from edgespec.runtime.wire.grpc_calls import to_request_error
from edgespec.runtime.wire.grpc_client import RemoteVerifier

SPEC = SessionSpec("s", "c", (5, 6, 7), SamplingParams(max_new_tokens=4))


def _stats(queue: int, sessions: int, busy: bool) -> ServerStats:
    return ServerStats(queue, sessions, 0, 0.0, 0, (), 0, 0, 0, 0.0, 0, 0, 0, 0, 0, 0, busy)


class Source:
    def __init__(self, stats: ServerStats | None = None, error: Exception | None = None) -> None:
        self._stats = stats
        self._error = error

    def stats(self, timeout_s: float | None = None) -> ServerStats:
        if self._error is not None:
            raise self._error
        assert self._stats is not None
        return self._stats


DOWN = RequestError(ErrorCode.UNAVAILABLE, "down")


def test_loads_keep_server_indices_and_busy_past_an_unreachable_server() -> None:
    servers = [Source(error=DOWN), Source(_stats(2, 3, True)), Source(_stats(0, 1, False))]
    loads, unreachable = server_loads(servers)
    assert loads == [ServerLoad(1, 2, 3, True), ServerLoad(2, 0, 1, False)]
    assert unreachable == [0]
    choice = route(servers, JoinShortestQueueRouting(), np.random.default_rng(0))
    assert (choice.server_index, choice.unreachable) == (2, (0,))
    assert choice.loads == tuple(loads)


def test_only_request_errors_mark_a_server_unreachable() -> None:
    broken = [Source(_stats(0, 0, False)), Source(error=KeyError("bug"))]
    with pytest.raises(KeyError, match="bug"):
        server_loads(broken)


def test_no_answer_from_three_servers_is_unavailable() -> None:
    with pytest.raises(RequestError) as info:
        route([Source(error=DOWN)] * 3, JoinShortestQueueRouting(), np.random.default_rng(0))
    assert (info.value.code, info.value.message) == (
        ErrorCode.UNAVAILABLE,
        "none of the 3 servers answered a Stats call",
    )


class Silent:
    """A server that takes the call and never answers it: ``stats`` returns only once
    ``released`` is set (its deadline, ``timeout_s``, left unkept)."""

    def __init__(self, released: threading.Event) -> None:
        self.released = released

    def stats(self, timeout_s: float | None = None) -> ServerStats:
        self.released.wait()
        raise DOWN


def test_a_silent_server_holds_a_round_only_its_timeout_and_a_cancel_ends_it() -> None:
    """Every server asked at once, each waited for at most ``timeout_s``: not one after
    another, each for as long as it takes (a hung one: the whole request timeout)."""
    released = threading.Event()
    servers: list[StatsSource] = [Silent(released), Silent(released), Source(_stats(0, 0, False))]
    try:
        start = time.monotonic()
        choice = route(servers, JoinShortestQueueRouting(), np.random.default_rng(0), 0.5)
        took_s = time.monotonic() - start
        cancel = threading.Event()
        threading.Timer(0.1, cancel.set).start()
        start = time.monotonic()
        with pytest.raises(Cancelled, match="^cancelled while routing$"):
            route(servers, JoinShortestQueueRouting(), np.random.default_rng(0), 30.0, cancel)
        cancelled_s = time.monotonic() - start
    finally:
        released.set()
    assert (choice.server_index, choice.unreachable) == (2, (0, 1))
    assert [failure.message for failure in choice.failures] == [
        "no answer to a Stats call within 0.5 s"
    ] * 2
    assert 0.5 <= took_s < 0.5 + 0.4  # one after another: 1.0 s
    assert cancelled_s < 0.1 + RETRY_BACKOFF_S + 0.2


class FakeRpcError(grpc.RpcError):  # type: ignore[misc]
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code = code
        self._details = details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


@pytest.mark.parametrize(
    ("status", "details", "code", "message"),
    [
        (
            grpc.StatusCode.NOT_FOUND,
            "unknown session 'x'",
            ErrorCode.NOT_FOUND,
            "unknown session 'x'",
        ),
        (grpc.StatusCode.UNAVAILABLE, "", ErrorCode.UNAVAILABLE, "UNAVAILABLE"),
        (grpc.StatusCode.DEADLINE_EXCEEDED, "late", ErrorCode.UNAVAILABLE, "late"),
        (
            grpc.StatusCode.UNIMPLEMENTED,
            "no RunFused",
            ErrorCode.INVALID_ARGUMENT,
            "UNIMPLEMENTED: no RunFused",
        ),
    ],
)
def test_grpc_status_codes_map_to_request_errors(
    status: grpc.StatusCode, details: str, code: ErrorCode, message: str
) -> None:
    error = to_request_error(FakeRpcError(status, details))
    assert (error.code, error.message) == (code, message)


class FakeCall:
    """A streaming call's chunks, and its ``cancel`` (the client cancels a stream it
    leaves, a no-op once it ended)."""

    def __init__(self, chunks: list[Any]) -> None:
        self._chunks = iter(chunks)
        self.cancelled = False

    def __iter__(self) -> FakeCall:
        return self

    def __next__(self) -> Any:
        return next(self._chunks)

    def cancel(self) -> bool:
        self.cancelled = True
        return True


class FakeStub:
    """Records every call as (rpc, request, metadata, timeout); answers from ``health``
    and ``rounds``, or raises ``error``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, Any, Any]] = []
        self.health = pb.HealthResponse(serving=True, vocab_size=11, max_draft_tokens=0)
        self.rounds: list[Any] = []
        self.error: grpc.RpcError | None = None

    def _record(self, rpc: str, request: Any, metadata: Any = None, timeout: Any = None) -> None:
        self.calls.append((rpc, request, metadata, timeout))
        if self.error is not None:
            raise self.error

    def OpenSession(self, request: Any, metadata: Any = None, timeout: Any = None) -> Any:
        self._record("OpenSession", request, metadata, timeout)
        return pb.OpenSessionResponse()

    def Health(self, request: Any, metadata: Any = None, timeout: Any = None) -> Any:
        self._record("Health", request, metadata, timeout)
        return self.health

    def Generate(self, request: Any, metadata: Any = None) -> FakeCall:
        self._record("Generate", request, metadata)
        return FakeCall([pb.GenerateChunk(token_ids=[1, 2])])

    def RunFused(self, request: Any, metadata: Any = None) -> FakeCall:
        self._record("RunFused", request, metadata)
        return FakeCall(list(self.rounds))


def _verifier(**kwargs: Any) -> tuple[RemoteVerifier, FakeStub]:
    verifier = RemoteVerifier("127.0.0.1:1", **kwargs)  # the channel never connects
    stub = FakeStub()
    verifier._stub = stub
    return verifier, stub


def test_calls_carry_the_bearer_token_and_the_deadline() -> None:
    verifier, stub = _verifier(auth_token="secret", timeout_s=2.5)
    verifier.open(SPEC)
    assert [(rpc, md, t) for rpc, _, md, t in stub.calls] == [
        ("OpenSession", (("authorization", "Bearer secret"),), 2.5)
    ]
    plain, plain_stub = _verifier()
    assert plain.health() is True
    assert [(md, t) for _, _, md, t in plain_stub.calls] == [((), 30.0)]


def test_health_fields_and_an_old_server_without_max_draft_tokens() -> None:
    verifier, stub = _verifier()
    assert (verifier.vocab_size(), verifier.max_draft_tokens()) == (11, None)
    assert verifier.max_context_tokens() is None  # nor its context
    stub.health = pb.HealthResponse(
        serving=False, vocab_size=11, max_draft_tokens=6, max_context_tokens=2048
    )
    assert (verifier.health(), verifier.max_draft_tokens()) == (False, 6)
    assert verifier.max_context_tokens() == 2048


def test_generate_sends_the_mode_and_gamma() -> None:
    verifier, stub = _verifier(auth_token="t")
    assert list(verifier.generate(SPEC, fused=True, gamma=3)) == [(1, 2)]
    assert list(verifier.generate(SPEC)) == [(1, 2)]
    modes = [(req.mode, req.gamma, md) for _, req, md, _ in stub.calls]
    auth = (("authorization", "Bearer t"),)
    assert modes == [(pb.MODE_FUSED, 3, auth), (pb.MODE_CENTRALIZED, 4, auth)]


def test_a_failing_unary_call_raises_its_mapped_code() -> None:
    verifier, stub = _verifier()
    stub.error = FakeRpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, "too many sessions")
    with pytest.raises(RequestError) as info:
        verifier.open(SPEC)
    assert (info.value.code, info.value.message) == (
        ErrorCode.RESOURCE_EXHAUSTED,
        "too many sessions",
    )


def _hidden_round(committed: tuple[int, ...], start: int, last: bool) -> Any:
    result = VerifyResult(2, 1, 1, committed[-1], committed[:1])
    hidden = np.ones((len(committed), 2), np.float32)
    outcome = VerifyOutcome(result, committed, last, 2, hidden, start)
    end = FusedRunEnd(None, HistorySnapshot()) if last else None
    return fused_round_to_proto(FusedRound(2, (1, 2), 0.0, VerifyReply(outcome, 0, 0, 1), end))


def test_run_fused_bounds_each_rounds_hidden_rows_by_the_tokens_before_it() -> None:
    verifier, stub = _verifier(auth_token="t")
    # round 1 commits positions 5-6, round 2 positions 7-8: each hidden block ends there
    stub.rounds = [_hidden_round((1, 9), 5, False), _hidden_round((2, 8), 7, True)]
    got = list(verifier.run_fused(FusedCall("s", 5, 2, HistorySnapshot())))
    assert [r.reply.outcome.committed_token_ids for r in got] == [(1, 9), (2, 8)]
    assert [r.reply.outcome.target_hidden_start for r in got] == [5, 7]
    assert got[-1].end is not None
    ((rpc, request, md, _),) = stub.calls
    assert (rpc, request.prefix_len, request.gamma, md) == (
        "RunFused",
        5,
        2,
        (("authorization", "Bearer t"),),
    )
    # a round whose rows run past what it commits is refused
    stub.rounds = [_hidden_round((1, 9), 6, True)]
    with pytest.raises(RequestError) as info:
        list(verifier.run_fused(FusedCall("s", 5, 2, HistorySnapshot())))
    assert info.value.code == ErrorCode.INTERNAL
    assert "2 hidden rows from position 6 run past the 7 committed tokens" in info.value.message


def test_a_stream_that_fails_raises_its_mapped_code() -> None:
    verifier, stub = _verifier()
    stub.error = FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION, "no draft")
    with pytest.raises(RequestError) as info:
        list(verifier.run_fused(FusedCall("s", 5, 2, HistorySnapshot())))
    assert (info.value.code, info.value.message) == (ErrorCode.FAILED_PRECONDITION, "no draft")
    with pytest.raises(RequestError) as info:
        list(verifier.generate(SPEC))
    assert (info.value.code, info.value.message) == (ErrorCode.FAILED_PRECONDITION, "no draft")
