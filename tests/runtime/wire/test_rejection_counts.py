"""``edgespec_rejected_requests_total``: every call the server refuses counts once, by its
status code, whether the servicer refused it (auth, a request that does not decode) or
the service did. The servicer's refusals were not counted at all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest

from edgespec.runtime.messages import PROTOCOL_VERSION
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import ServerFactory

_TOKEN = "alpha-secret"
_BEARER = (("authorization", f"Bearer {_TOKEN}"),)
_INVALID = "INVALID_ARGUMENT"


def _open(session_id: str = "s", version: int = PROTOCOL_VERSION, **sampling: Any) -> Any:
    return pb.OpenSessionRequest(
        protocol_version=version,
        session_id=session_id,
        client_id="c",
        prompt_token_ids=[1, 2, 3],
        sampling=pb.Sampling(max_new_tokens=4, **sampling),
    )


def _counted(server: ServerThread, call: Callable[[], Any]) -> tuple[str, dict[str, int]]:
    """The status ``call`` is refused with, and how each code's count grew meanwhile."""
    assert server.service is not None
    before = dict(server.service.metrics().rejected_by_code)
    with pytest.raises(grpc.RpcError) as info:
        call()
    after = dict(server.service.metrics().rejected_by_code)
    grown = {code: after[code] - before[code] for code in after if after[code] != before[code]}
    return info.value.code().name, grown


def _raw(port: int, method: str, streams: bool = False) -> Any:
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    path = f"/edgespec.v1.Verification/{method}"
    return channel.unary_stream(path) if streams else channel.unary_unary(path)


def _cases(stub: Any, port: int) -> dict[str, tuple[Callable[[], Any], str]]:
    verify = pb.VerifyRequest
    return {
        "temperature nan": (lambda: stub.OpenSession(_open(temperature=float("nan"))), _INVALID),
        "session_id of 129 characters": (lambda: stub.OpenSession(_open("s" * 129)), _INVALID),
        "protocol_version 0": (lambda: stub.OpenSession(_open(version=0)), "FAILED_PRECONDITION"),
        "draft_s nan": (
            lambda: stub.Verify(verify(session_id="s", prefix_len=3, draft_s=float("nan"))),
            _INVALID,
        ),
        "undecodable Verify": (lambda: _raw(port, "Verify")(b"\xff\xff\xff"), _INVALID),
        "undecodable Health": (lambda: _raw(port, "Health")(b"\xff"), _INVALID),
        "close: session_id of 129 characters": (
            lambda: stub.CloseSession(pb.CloseSessionRequest(session_id="s" * 129)),
            _INVALID,
        ),
        "Generate mode 7": (
            lambda: list(stub.Generate(pb.GenerateRequest(session=_open("g"), mode=7))),
            _INVALID,
        ),
        "undecodable RunFused": (
            lambda: list(_raw(port, "RunFused", streams=True)(b"\xff\xff\xff")),
            _INVALID,
        ),
    }


_KINDS = list(_cases(None, 0))


@pytest.mark.parametrize("kind", _KINDS)
def test_a_request_the_servicer_cannot_decode_counts_once(
    make_server: ServerFactory, kind: str
) -> None:
    server = make_server()
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    stub.OpenSession(_open(), timeout=10)
    call, code = _cases(stub, server.port)[kind]
    assert _counted(server, call) == (code, {code: 1})


@pytest.mark.parametrize(
    "metadata",
    [(), (("authorization", _TOKEN),), (("authorization", "Bearer wrong"),)],
    ids=["missing", "without its scheme", "wrong"],
)
@pytest.mark.parametrize("method", ["Stats", "OpenSession", "Health"])
def test_an_unauthenticated_call_counts_once(
    make_server: ServerFactory, metadata: tuple[tuple[str, str], ...], method: str
) -> None:
    server = make_server(auth_tokens=[_TOKEN], health_requires_auth=True)
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    request = {"Stats": pb.StatsRequest(), "OpenSession": _open(), "Health": pb.HealthRequest()}
    call = getattr(stub, method)
    counted = _counted(server, lambda: call(request[method], metadata=metadata, timeout=10))
    assert counted == ("UNAUTHENTICATED", {"UNAUTHENTICATED": 1})
    call(request[method], metadata=_BEARER, timeout=10)  # the right token: served, not counted
    assert server.service is not None and server.service.stats().num_rejected == 1


def test_a_refusal_of_the_service_still_counts_once(make_server: ServerFactory) -> None:
    """The service counts its own checks' refusals as they are raised; the servicer, which
    ends the call with them, does not count them again (unary and streamed calls)."""
    server = make_server()
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    stub.OpenSession(_open(), timeout=10)
    unknown = pb.VerifyRequest(session_id="ghost", prefix_len=3)
    assert _counted(server, lambda: stub.Verify(unknown)) == ("NOT_FOUND", {"NOT_FOUND": 1})
    other = _open(temperature=0.5)  # not a retry of the open: "session 's' already exists"
    assert _counted(server, lambda: stub.OpenSession(other)) == (_INVALID, {_INVALID: 1})
    fused = pb.FusedRequest(session_id="ghost", prefix_len=3, gamma=2)
    counted = _counted(server, lambda: list(stub.RunFused(fused, timeout=10)))
    assert counted == ("NOT_FOUND", {"NOT_FOUND": 1})
    assert stub.Stats(pb.StatsRequest(), timeout=10).num_rejected == 3


def test_a_handlers_unexpected_failure_counts_once_as_internal(
    make_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_server()
    assert server.service is not None

    def broken() -> Any:
        raise ValueError("boom")

    monkeypatch.setattr(server.service, "stats", broken)
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    assert _counted(server, lambda: stub.Stats(pb.StatsRequest())) == (
        "INTERNAL",
        {"INTERNAL": 1},
    )


def test_a_message_over_the_limit_is_refused_by_grpc_uncounted(make_server: ServerFactory) -> None:
    """gRPC refuses a message over ``max_message_bytes`` before any handler sees the call,
    so the server cannot count it (RUNTIME.md's metric table says so)."""
    server = make_server(max_message_bytes=1 << 16)
    options = [("grpc.max_send_message_length", 1 << 20)]
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}", options=options)
    stub = pb_grpc.VerificationStub(channel)
    big = pb.CloseSessionRequest(session_id="x" * (1 << 17))
    assert _counted(server, lambda: stub.CloseSession(big, timeout=10)) == (
        "RESOURCE_EXHAUSTED",
        {},
    )
