"""Client-reported timing (``draft_s``, ``network_s``): across the codec, checked, refused
over gRPC when bad, and reported by the drafter (the deadlines they feed:
test_slo_serving.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.wire.codec import call_from_proto, call_to_proto, pb
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.conftest import ServerFactory

PROMPT = (3, 1, 4, 1, 5, 9, 2, 6)


def test_timing_fields_cross_the_codec() -> None:
    call = VerifyCall("s", 3, (1, 2), draft_s=0.0125, network_s=0.5)
    back = call_from_proto(
        pb.VerifyRequest.FromString(call_to_proto(call).SerializeToString()), 16, 32
    )
    assert (back.draft_s, back.network_s) == (0.0125, 0.5)
    old = call_from_proto(
        pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1]), 16, 32
    )
    assert (old.draft_s, old.network_s) == (0.0, 0.0)  # a client that sends neither


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("draft_s", -0.5, "draft_s must be finite and >= 0, got -0.5"),
        ("draft_s", math.inf, "draft_s must be finite and >= 0, got inf"),
        ("network_s", math.nan, "network_s must be finite and >= 0, got nan"),
        ("network_s", -1e-9, "network_s must be finite and >= 0, got -1e-09"),
    ],
)
def test_timing_fields_are_checked(field: str, value: float, message: str) -> None:
    request = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1])
    setattr(request, field, value)
    with pytest.raises(RequestError) as info:
        call_from_proto(request, 16, 32)
    assert (info.value.code, info.value.message) == (ErrorCode.INVALID_ARGUMENT, message)


def test_bad_timing_is_refused_over_grpc(make_server: ServerFactory) -> None:
    server = make_server()
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    verifier.open(SessionSpec("s", "c", PROMPT, SamplingParams(max_new_tokens=4)))
    with pytest.raises(RequestError) as info:
        verifier.verify(VerifyCall("s", len(PROMPT), (1,), draft_s=-2.0))
    assert (info.value.code, info.value.message) == (
        ErrorCode.INVALID_ARGUMENT,
        "draft_s must be finite and >= 0, got -2.0",
    )


class _Capturing:
    """A verifier that records the calls it passes on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[VerifyCall] = []

    def open(self, spec: SessionSpec) -> None:
        self.inner.open(spec)

    def verify(self, call: VerifyCall) -> VerifyReply:
        self.calls.append(call)
        reply: VerifyReply = self.inner.verify(call)
        return reply

    def close(self, session_id: str) -> None:
        self.inner.close(session_id)


def test_drafter_reports_its_draft_and_network_times(
    make_server: ServerFactory, draft_model: Any
) -> None:
    server = make_server()
    verifier = _Capturing(RemoteVerifier(f"127.0.0.1:{server.port}"))
    result = generate(
        verifier,
        TransformersDraft(draft_model),
        PROMPT,
        SamplingParams(max_new_tokens=16),
        DraftOptions(session_id="timed"),
        StaticWindow(3),
    )
    calls, rounds = verifier.calls, result.rounds
    assert len(calls) == len(rounds) > 2
    assert [c.draft_s for c in calls] == [r.draft_s for r in rounds]
    network = [r.uplink_s + r.downlink_s for r in rounds]
    assert [c.network_s for c in calls] == [0.0, *network[:-1]]  # the previous round's
    assert all(c.draft_s > 0 for c in calls[:-1])
