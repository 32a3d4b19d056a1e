"""Fused-run messages on the wire: round trips and malformed snapshots."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.types import VerifyResult
from edgespec.policies.history_snapshot import MAX_WINDOW_STATE, HistorySnapshot
from edgespec.policies.interfaces import WindowDecision
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, FusedRound, FusedRunEnd, VerifyOutcome, VerifyReply
from edgespec.runtime.wire.codec import hidden_to_bytes, pb
from edgespec.runtime.wire.fused_codec import (
    fused_call_from_proto,
    fused_call_to_proto,
    fused_round_from_proto,
    fused_round_to_proto,
)

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
    msg = fused_call_to_proto(FusedCall("s", 9, 4, SNAPSHOT))
    msg.history.window_state.extend([0.5] * (MAX_WINDOW_STATE + 1 - 3))  # SNAPSHOT holds 3
    with pytest.raises(RequestError) as info:
        fused_call_from_proto(msg)
    assert info.value.message == "history snapshot: window_state holds 65 numbers; at most 64"
    msg = fused_call_to_proto(FusedCall("s", 9, 4, SNAPSHOT))
    msg.history.window_state.extend([0.5] * (MAX_WINDOW_STATE - 3))
    assert len(fused_call_from_proto(msg).history.window_state) == MAX_WINDOW_STATE
    chunk = pb.FusedRoundChunk(run_ended=True, history=pb.HistorySnapshot(network_s=-1.0))
    chunk.verdict.first_rejection = -1
    with pytest.raises(RequestError) as info:
        fused_round_from_proto(chunk, 5)
    assert (info.value.code, info.value.message) == (
        ErrorCode.INTERNAL,
        "malformed FusedRoundChunk: history snapshot: network_s must be finite and >= 0, got -1.0",
    )


def test_edge_values_survive_the_wire() -> None:
    """A first token committed just now (age 0.0) is not "no first token yet"; accepted
    counts stay apart from drafted ones; a next window of 1 is a decision, not "none"."""
    just_now = HistorySnapshot(((3, 1),), 1, 3, 1, 2, 0, 0.0, False, 0.0, ())
    call = FusedCall("s", 4, 2, just_now)
    assert fused_call_from_proto(fused_call_to_proto(call)).history.first_token_age_s == 0.0
    result = VerifyResult(3, 1, 1, 7, (5,))
    reply = VerifyReply(VerifyOutcome(result, (5, 7), False, 0), 0.125, 0.5, 2, 1)
    sent = FusedRound(4, (5, 6, 8), 0.0625, reply, FusedRunEnd(WindowDecision(1), just_now))
    assert fused_round_from_proto(fused_round_to_proto(sent), 9) == sent


def test_a_fused_call_session_id_is_bounded() -> None:
    msg = fused_call_to_proto(FusedCall("s" * 129, 9, 4, SNAPSHOT))
    with pytest.raises(RequestError) as info:
        fused_call_from_proto(msg)
    assert (info.value.code, info.value.message) == (
        ErrorCode.INVALID_ARGUMENT,
        "session_id is 129 characters; the limit is 128",
    )
    assert fused_call_from_proto(fused_call_to_proto(FusedCall("s" * 128, 9, 4, SNAPSHOT)))


def test_a_snapshot_with_fewer_drafted_than_accepted_is_named() -> None:
    msg = fused_call_to_proto(FusedCall("s", 9, 4, SNAPSHOT))
    msg.history.recent_drafted.append(5)
    msg.history.recent_drafted.append(6)
    with pytest.raises(RequestError) as info:
        fused_call_from_proto(msg)
    assert info.value.message == "history snapshot: 4 recent_drafted but 2 recent_accepted"


def test_a_fused_round_bounds_its_hidden_rows_by_the_prefix() -> None:
    data, size = hidden_to_bytes(np.zeros((4, 3), np.float32))
    chunk = pb.FusedRoundChunk(gamma=2, draft_token_ids=[4, 5])
    chunk.verdict.num_drafted, chunk.verdict.num_accepted = 2, 1
    chunk.verdict.first_rejection, chunk.verdict.extra_token = 1, 9
    chunk.verdict.committed_token_ids.extend([4, 9])
    chunk.verdict.target_hidden, chunk.verdict.hidden_size = data, size
    chunk.verdict.target_hidden_start = 7
    assert fused_round_from_proto(chunk, 9).reply.outcome.committed_token_ids == (4, 9)
    with pytest.raises(RequestError) as info:
        fused_round_from_proto(chunk, 8)
    assert (info.value.code, info.value.message) == (
        ErrorCode.INTERNAL,
        "malformed VerifyResponse: 4 hidden rows from position 7 run past the 10 committed tokens",
    )
