"""Fused-run messages on the wire: round trips and malformed snapshots."""

from __future__ import annotations

import pytest

from edgespec.core.types import VerifyResult
from edgespec.policies.inputs import HistorySnapshot
from edgespec.policies.interfaces import WindowDecision
from edgespec.runtime.codec import pb
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.fused_codec import (
    fused_call_from_proto,
    fused_call_to_proto,
    fused_round_from_proto,
    fused_round_to_proto,
)
from edgespec.runtime.messages import FusedCall, FusedRound, FusedRunEnd, VerifyOutcome, VerifyReply

SNAPSHOT = HistorySnapshot(((4, 2), (3, 3)), 7, 3, 3, 11, 2, 0.5, True, 0.25, (1.25, 2.0, 1.0))


def test_calls_and_rounds_round_trip() -> None:
    call = FusedCall("s", 9, 4, SNAPSHOT)
    assert fused_call_from_proto(fused_call_to_proto(call)) == call
    fresh = FusedCall("s", 5, 1, HistorySnapshot())  # no first token yet: age unset
    assert fused_call_from_proto(fused_call_to_proto(fresh)) == fresh
    result = VerifyResult(3, 1, 1, 7, (5,))
    reply = VerifyReply(VerifyOutcome(result, (5, 7), False, 0), 0.125, 0.5, 2, 1)
    for end in (None, FusedRunEnd(WindowDecision(2), SNAPSHOT), FusedRunEnd(None, SNAPSHOT)):
        sent = FusedRound(4, (5, 6, 8), 0.0625, reply, end)
        assert fused_round_from_proto(fused_round_to_proto(sent), 9) == sent


def test_a_malformed_snapshot_is_refused_naming_the_field() -> None:
    msg = fused_call_to_proto(FusedCall("s", 9, 4, SNAPSHOT))
    msg.history.recent_accepted.append(1)
    with pytest.raises(RequestError) as info:
        fused_call_from_proto(msg)
    assert (info.value.code, info.value.message) == (
        ErrorCode.INVALID_ARGUMENT,
        "history snapshot: 2 recent_drafted but 3 recent_accepted",
    )
    msg = fused_call_to_proto(FusedCall("s", 9, 4, SNAPSHOT))
    msg.history.first_token_age_s = -1.0
    with pytest.raises(RequestError) as info:
        fused_call_from_proto(msg)
    assert (
        info.value.message
        == "history snapshot: first_token_age_s must be finite and >= 0, got -1.0"
    )
    msg = fused_call_to_proto(FusedCall("s", 9, 4, SNAPSHOT))
    msg.history.window_state.append(float("inf"))
    with pytest.raises(RequestError) as info:
        fused_call_from_proto(msg)
    assert info.value.message == "history snapshot: window_state must hold finite floats, got inf"
    chunk = pb.FusedRoundChunk(run_ended=True, history=pb.HistorySnapshot(network_s=-1.0))
    chunk.verdict.first_rejection = -1
    with pytest.raises(RequestError) as info:
        fused_round_from_proto(chunk, 5)
    assert (info.value.code, info.value.message) == (
        ErrorCode.INTERNAL,
        "malformed FusedRoundChunk: history snapshot: network_s must be finite and >= 0, got -1.0",
    )
