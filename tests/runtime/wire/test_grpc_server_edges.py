"""The gRPC servicer's exact replies: OpenSession, CloseSession and Health fields (the
target's context read by the client too), a Health request that does not parse (without
auth), a bearer token with padding, an explicit port, and a ServerThread stopped twice."""

from __future__ import annotations

import socket
import time
from typing import Any

import grpc
import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.messages import PROTOCOL_VERSION
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_common import pb_grpc
from tests.runtime.conftest import ServerFactory, start_server

_TOKEN = "alpha-secret"


def _stub(port: int) -> Any:
    return pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{port}"))


def test_open_and_close_session_reply_fields(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    stub = _stub(make_server().port)
    request = pb.OpenSessionRequest(
        protocol_version=PROTOCOL_VERSION,
        session_id="o",
        client_id="x",
        prompt_token_ids=[3, 1, 4],
        sampling=pb.Sampling(max_new_tokens=4),
    )
    opened = stub.OpenSession(request, timeout=10)
    assert (opened.session_id, opened.vocab_size, opened.protocol_version) == (
        "o",
        target.vocab_size,
        5,
    )
    closes = [stub.CloseSession(pb.CloseSessionRequest(session_id="o"), timeout=10).existed]
    closes.append(stub.CloseSession(pb.CloseSessionRequest(session_id="o"), timeout=10).existed)
    assert closes == [True, False]


def test_health_reply_fields(make_server: ServerFactory, target: TransformersTarget) -> None:
    server = make_server(max_draft_tokens=7, target="tiny-target")
    health = _stub(server.port).Health(pb.HealthRequest(), timeout=10)
    assert (health.serving, health.protocol_version, health.vocab_size) == (
        True,
        5,
        target.vocab_size,
    )
    assert (health.max_draft_tokens, health.target) == (7, "tiny-target")
    assert health.max_context_tokens == target.max_context_tokens == 4096
    assert _stub(make_server().port).Health(pb.HealthRequest(), timeout=10).target == ""


def test_health_says_whether_the_server_runs_fused_rounds(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    """With a co-located draft (make_server's) or cloud-only fused rounds: yes; without
    --draft: no (a client refuses a window that may fuse before it drafts)."""
    without = start_server(target)
    try:
        said = [
            RemoteVerifier(f"127.0.0.1:{server.port}", timeout_s=10).describe().runs_fused_rounds
            for server in (make_server(), make_server(fused_rounds="cloud_only"), without)
        ]
    finally:
        without.stop(grace_s=0)
    assert said == [True, True, False]
    assert not pb.HealthResponse().HasField("runs_fused_rounds")  # an older server: unknown


def test_health_names_the_semantic_head_it_serves(target: TransformersTarget) -> None:
    """The head's SHA-256 (a drafter holds the shipped default and its measured agreement
    to the head they were measured with); a server without one names none."""
    from edgespec.runtime.server.semantic import semantic_rules
    from tests.runtime.semantic_helpers import constant_head

    digest = "0123456789abcdef" * 4
    servers = [start_server(target, rules=semantic_rules(constant_head(-20.0), head_sha256=digest)),
               start_server(target)]  # fmt: skip
    try:
        said = [
            RemoteVerifier(f"127.0.0.1:{s.port}", timeout_s=10).describe().semantic_head_sha256
            for s in servers
        ]
    finally:
        for server in servers:
            server.stop(grace_s=0)
    assert said == [digest, None]


def test_the_client_reads_the_targets_context_from_health(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``max_context_tokens()`` over loopback: the tiny target's 4096; a context a uint32
    cannot carry is sent as 0 (unknown, as from an older server), read as ``None``, and
    Health still answers."""
    client = RemoteVerifier(f"127.0.0.1:{make_server().port}", timeout_s=10)
    try:
        assert (client.max_context_tokens(), client.max_draft_tokens()) == (4096, 32)
        huge = property(lambda self: 1 << 32)
        monkeypatch.setattr(TransformersTarget, "max_context_tokens", huge)
        assert (client.max_context_tokens(), client.health()) == (None, True)
    finally:
        client.close_channel()


@pytest.mark.parametrize("method", ["Health", "Stats"])
def test_an_undecodable_request_is_invalid_argument_naming_its_type(
    make_server: ServerFactory, method: str
) -> None:
    server = make_server()
    call = grpc.insecure_channel(f"127.0.0.1:{server.port}").unary_unary(
        f"/edgespec.v1.Verification/{method}"
    )
    with pytest.raises(grpc.RpcError) as info:
        call(b"\xff", timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = info.value.details() or ""
    assert details.startswith(f"undecodable {method}Request (") and details.endswith(")")


def test_a_bearer_token_with_padding_is_accepted(make_server: ServerFactory) -> None:
    stub = _stub(make_server(auth_tokens=[_TOKEN]).port)
    metadata = (("authorization", f"Bearer   {_TOKEN}  "),)
    stats = stub.Stats(pb.StatsRequest(), metadata=metadata, timeout=10)
    assert stats.num_sessions == 0


def test_an_explicit_port_overrides_the_config(target: TransformersTarget) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = start_server(target, port=port)  # the config's own port is 0
    try:
        assert server.port == port
        assert _stub(port).Health(pb.HealthRequest(), timeout=10).serving
    finally:
        server.stop(grace_s=0)


def test_stopping_a_server_thread_twice_returns_at_once(target: TransformersTarget) -> None:
    server = start_server(target)
    server.stop(grace_s=0)
    began = time.monotonic()
    server.stop(grace_s=0)
    assert time.monotonic() - began < 5.0


def test_a_refusal_naming_many_payloads_arrives_as_itself(make_server: ServerFactory) -> None:
    """20,000 payload names: once the refusal echoed them all, past gRPC's 16 KiB header
    limit, and the client got RESOURCE_EXHAUSTED "Stream removed" instead."""
    server = make_server()
    stub = _stub(server.port)
    from edgespec.runtime.messages import PROTOCOL_VERSION

    stub.OpenSession(
        pb.OpenSessionRequest(
            protocol_version=PROTOCOL_VERSION,
            session_id="s",
            prompt_token_ids=[1, 2, 3],
            sampling=pb.Sampling(max_new_tokens=4),
        )
    )
    request = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1])
    for index in range(20_000):
        request.payloads.add(name=f"p{index}", shape=[1], values=[0.0])
    with pytest.raises(grpc.RpcError) as info:
        stub.Verify(request)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").endswith("and 19992 more")


def test_a_long_status_message_is_cut_to_what_grpc_carries() -> None:
    import asyncio

    from edgespec.runtime.errors import ErrorCode, RequestError
    from edgespec.runtime.wire.grpc_server import MAX_DETAILS_CHARS, _abort

    class Context:
        async def abort(self, code: Any, details: str) -> None:
            self.sent = (code, details)

    context = Context()
    asyncio.run(_abort(context, RequestError(ErrorCode.INVALID_ARGUMENT, "x" * 20_000)))
    code, details = context.sent
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details == "x" * MAX_DETAILS_CHARS + " ... (20000 characters in all)"


def test_close_session_checks_its_id_as_open_session_does(make_server: ServerFactory) -> None:
    from edgespec.runtime.validation import MAX_IDENTIFIER_CHARS

    stub = _stub(make_server().port)
    too_long = "x" * (MAX_IDENTIFIER_CHARS + 1)
    with pytest.raises(grpc.RpcError) as info:
        stub.CloseSession(pb.CloseSessionRequest(session_id=too_long))
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        f"session_id is {len(too_long)} characters; the limit is {MAX_IDENTIFIER_CHARS}",
    )
