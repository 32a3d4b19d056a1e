"""A server stopping without grace (``edgespec serve`` stopped or restarted) cuts some of the
calls under way with ``CANCELLED`` (details ``CANCELLED``), others with ``UNAVAILABLE``
(``Cancelling all calls``), as its connection's teardown reaches them first: a reviewer's
endpoint answered one request of ~370 a 503 ``cancelled`` while its server restarted. The
client cancels no unary call itself, and gRPC says ``Locally cancelled by application!`` of
one it does: a ``CANCELLED`` it did not ask for is the server going away, ``UNAVAILABLE``,
and the drafter reconnects. Here a server that cancels the first verification as a stopping
server does (``context.cancel()``: the same status, details and debug string)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_calls import LOCAL_CANCEL_DETAILS, to_request_error
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import GREEDY, PROMPT
from tests.runtime.conftest import ServerFactory
from tests.runtime.edge.test_client_routing_edges import FakeRpcError

STOPPING = "the server cancelled the call (CANCELLED): it is stopping or restarting"


@pytest.mark.parametrize(
    ("details", "code", "message"),
    [
        ("CANCELLED", ErrorCode.UNAVAILABLE, STOPPING),  # what a stopping server's cut says
        ("", ErrorCode.UNAVAILABLE, STOPPING),
        ("the server stopped", ErrorCode.UNAVAILABLE,
         "the server cancelled the call (CANCELLED: the server stopped): it is stopping or "
         "restarting"),
        (LOCAL_CANCEL_DETAILS, ErrorCode.CANCELLED, LOCAL_CANCEL_DETAILS),  # the client's own
    ],
)  # fmt: skip
def test_a_cancelled_call_the_client_did_not_cancel_is_unavailable(
    details: str, code: ErrorCode, message: str
) -> None:
    error = to_request_error(FakeRpcError(grpc.StatusCode.CANCELLED, details))
    assert (error.code, error.message) == (code, message)


class CancelsFirstVerify(pb_grpc.VerificationServicer):  # type: ignore[misc]
    """The server at ``address`` behind a front that cancels the first ``Verify`` (as a
    server stopping mid-call does) and passes every other call on."""

    def __init__(self, address: str) -> None:
        self._stub = pb_grpc.VerificationStub(grpc.insecure_channel(address))
        self.num_cancelled = 0

    def _passed(self, method: str, request: Any, context: Any) -> Any:
        try:
            return getattr(self._stub, method)(request, timeout=10)
        except grpc.RpcError as exc:
            context.abort(exc.code(), exc.details())

    def OpenSession(self, request: Any, context: Any) -> Any:
        return self._passed("OpenSession", request, context)

    def CloseSession(self, request: Any, context: Any) -> Any:
        return self._passed("CloseSession", request, context)

    def Verify(self, request: Any, context: Any) -> Any:
        if self.num_cancelled == 0:
            self.num_cancelled += 1
            context.cancel()
            return pb.VerifyResponse()
        return self._passed("Verify", request, context)


@pytest.fixture
def front(make_server: ServerFactory) -> Iterator[tuple[str, CancelsFirstVerify]]:
    servicer = CancelsFirstVerify(f"127.0.0.1:{make_server().port}")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_VerificationServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", servicer
    server.stop(grace=0)


def test_a_verification_the_server_cancelled_is_played_again_on_a_reopened_session(
    front: tuple[str, CancelsFirstVerify], target: TransformersTarget
) -> None:
    """It ended the request: ``RequestError(CANCELLED, 'CANCELLED')``, a 503 ``cancelled``."""
    address, servicer = front
    result = generate(RemoteVerifier(address), NgramDrafter(), PROMPT, GREEDY,
                      DraftOptions("cut"))  # fmt: skip
    assert servicer.num_cancelled == 1
    assert result.num_reconnects == 1
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 20)
