"""Generate honours every part of its request or refuses it, naming the field: a mode that
is neither centralized nor fused, a fused (drafted) baseline of a session naming a rule
other than ``exact``, hidden states it cannot stream. And a handler's unexpected exception
reaches the client as ``INTERNAL`` saying what was raised where, not gRPC's ``UNKNOWN``."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from edgespec.runtime.messages import PROTOCOL_VERSION
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_common import pb_grpc
from tests.runtime.conftest import ServerFactory

RULE_REFUSED = (
    "verification_rule {!r}: Generate cannot run the fused baseline under it (drafted by this "
    "server's draft, verified with 'exact' only)"
)


def _session(**fields: Any) -> Any:
    return pb.OpenSessionRequest(
        protocol_version=PROTOCOL_VERSION,
        session_id="g",
        client_id="c",
        prompt_token_ids=[5, 6, 7],
        sampling=pb.Sampling(max_new_tokens=4),
        **fields,
    )


def _generate(port: int, request: Any) -> tuple[grpc.StatusCode, str]:
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
    try:
        chunks = list(stub.Generate(request, timeout=60))
    except grpc.RpcError as exc:
        return exc.code(), exc.details()
    return grpc.StatusCode.OK, repr([list(c.token_ids) for c in chunks])


@pytest.mark.parametrize("mode", [2, 7])
def test_an_unknown_mode_is_refused(make_server: ServerFactory, mode: int) -> None:
    request = pb.GenerateRequest(session=_session(), mode=mode, gamma=2)
    assert _generate(make_server().port, request) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        f"mode {mode}: Generate cannot run it; its modes are MODE_CENTRALIZED (0) and "
        "MODE_FUSED (1)",
    )


@pytest.mark.parametrize(
    "session",
    [
        _session(verification_rule="bogus"),
        _session(verification_rule="semantic", semantic=pb.SemanticOptions(threshold=8)),
    ],
)
def test_a_drafted_fused_baseline_refuses_a_rule_it_would_not_use(
    make_server: ServerFactory, session: Any
) -> None:
    request = pb.GenerateRequest(session=session, mode=pb.MODE_FUSED, gamma=2)
    assert _generate(make_server().port, request) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        RULE_REFUSED.format(session.verification_rule),
    )


@pytest.mark.parametrize(
    ("mode", "overrides"),
    [(pb.MODE_CENTRALIZED, {}), (pb.MODE_FUSED, {"fused_rounds": "cloud_only"})],
)
def test_where_the_session_is_opened_as_sent_its_rule_is_checked_as_opensession_does(
    make_server: ServerFactory, mode: int, overrides: dict[str, Any]
) -> None:
    request = pb.GenerateRequest(session=_session(verification_rule="bogus"), mode=mode, gamma=2)
    assert _generate(make_server(**overrides).port, request) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "unknown verification rule 'bogus'; this server serves ['exact']",
    )


@pytest.mark.parametrize("mode", [pb.MODE_CENTRALIZED, pb.MODE_FUSED])
def test_hidden_states_are_refused_as_generate_streams_token_ids_only(
    make_server: ServerFactory, mode: int
) -> None:
    request = pb.GenerateRequest(session=_session(return_hidden=True), mode=mode, gamma=2)
    assert _generate(make_server().port, request) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "session.return_hidden: Generate cannot send hidden states (it streams token ids "
        "only); open a session and Verify for them",
    )


def test_an_exact_fused_baseline_still_runs(make_server: ServerFactory) -> None:
    request = pb.GenerateRequest(session=_session(), mode=pb.MODE_FUSED, gamma=2)
    code, _ = _generate(make_server().port, request)
    assert code == grpc.StatusCode.OK


def test_a_handler_s_unexpected_exception_is_internal_and_named(
    make_server: ServerFactory,
) -> None:
    server = make_server()
    assert server.service is not None

    def broken() -> Any:
        raise RuntimeError("stats bug")

    server.service.stats = broken  # type: ignore[method-assign]
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    with pytest.raises(grpc.RpcError) as info:
        stub.Stats(pb.StatsRequest(), timeout=10)
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.INTERNAL,
        "Stats failed on the server: RuntimeError('stats bug')",
    )
    assert stub.Health(pb.HealthRequest(), timeout=10).serving  # the server goes on
