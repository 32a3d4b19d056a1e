"""The semantic-verification fields on the wire: the session's options, the draft's
hidden states (float16 bytes), the server's request for them and its mismatch count; all
additive, so an exact call encodes as before."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.types import SamplingParams, VerifyResult
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    DRAFT_HIDDEN,
    SemanticSpec,
    SessionSpec,
    VerifyCall,
    VerifyOutcome,
    VerifyReply,
)
from edgespec.runtime.wire.codec import (
    call_from_proto,
    call_to_proto,
    pb,
    reply_from_proto,
    reply_to_proto,
    spec_from_proto,
    spec_to_proto,
)

GREEDY = SamplingParams(max_new_tokens=4)


def test_semantic_options_round_trip_and_exact_specs_carry_none() -> None:
    semantic = SemanticSpec(12, 2e7, per=0.05, rtt_s=0.05, draft_hidden_size=640)
    spec = SessionSpec("s", "c", (1, 2), GREEDY, verification_rule="semantic", semantic=semantic)
    assert spec_from_proto(spec_to_proto(spec)) == spec
    plain = spec_to_proto(SessionSpec("t", "c", (1,), GREEDY))
    assert not plain.HasField("semantic") and spec_from_proto(plain).semantic is None


def test_semantic_options_need_the_semantic_rule() -> None:
    msg = spec_to_proto(SessionSpec("s", "c", (1,), GREEDY))
    msg.semantic.threshold = 12
    with pytest.raises(RequestError) as info:
        spec_from_proto(msg)
    assert (info.value.code, info.value.message) == (
        ErrorCode.INVALID_ARGUMENT,
        "semantic options need verification_rule 'semantic', not 'exact'",
    )


def test_draft_hidden_travels_as_float16_bytes() -> None:
    hidden = np.array([[1.5, -2.0, 70000.0], [0.1, 0.0, -1.0]], dtype=np.float32)
    call = VerifyCall("s", 3, (4, 5), payloads={DRAFT_HIDDEN: hidden})
    msg = call_to_proto(call)
    assert len(msg.payloads) == 0 and msg.draft_hidden_size == 3
    assert len(msg.draft_hidden) == hidden.size * 2
    back = call_from_proto(msg, 16, 32).payloads[DRAFT_HIDDEN]
    assert back.dtype == np.float32 and back.shape == (2, 3)
    expected = np.clip(hidden, -65504, 65504).astype(np.float16).astype(np.float32)
    assert np.array_equal(back, expected)  # clipped to float16's range, rounded to it
    assert call_from_proto(call_to_proto(VerifyCall("s", 3, (4,))), 16, 32).payloads == {}


@pytest.mark.parametrize(
    ("data", "size", "message"),
    [
        (b"\x00" * 5, 2, "has 5 bytes, not rows x draft_hidden_size (2) x 2 (float16)"),
        (b"\x00" * 4, 0, "has 4 bytes, not rows x draft_hidden_size (0) x 2 (float16)"),
    ],
)
def test_malformed_draft_hidden_bytes_are_refused(data: bytes, size: int, message: str) -> None:
    msg = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1, 2])
    msg.draft_hidden, msg.draft_hidden_size = data, size
    with pytest.raises(RequestError) as info:
        call_from_proto(msg, 16, 32)
    assert (info.value.code, info.value.message) == (
        ErrorCode.INVALID_ARGUMENT,
        f"draft_hidden {message}",
    )


def test_draft_hidden_given_twice_is_refused() -> None:
    msg = call_to_proto(VerifyCall("s", 3, (1,), payloads={DRAFT_HIDDEN: np.ones((1, 2))}))
    msg.payloads.add(name=DRAFT_HIDDEN, shape=[1, 2], values=[1.0, 1.0])
    with pytest.raises(RequestError, match="draft_hidden is given twice"):
        call_from_proto(msg, 16, 32)


def test_the_hidden_request_and_the_mismatch_count_round_trip() -> None:
    waiting = VerifyOutcome(
        VerifyResult(3, 0, 0, 9, ()), (), False, 4, hidden_request=(0, 2), accepted_mismatches=0
    )
    back = reply_from_proto(reply_to_proto(VerifyReply(waiting, 0.1, 0.2, 1)), (5, 6, 7), 3)
    assert back.outcome.hidden_request == (0, 2) and back.outcome.committed_token_ids == ()
    done = VerifyOutcome(
        VerifyResult(3, 3, None, 8, (5, 6, 7)), (5, 6, 7, 8), False, 4, accepted_mismatches=2
    )
    back = reply_from_proto(reply_to_proto(VerifyReply(done, 0.1, 0.2, 1)), (5, 6, 7), 3)
    assert back.outcome.hidden_request is None and back.outcome.accepted_mismatches == 2
    bad = reply_to_proto(VerifyReply(waiting, 0.1, 0.2, 1))
    bad.hidden_request.append(7)
    with pytest.raises(RequestError, match=r"malformed VerifyResponse: hidden_request \[0, 2, 7\]"):
        reply_from_proto(bad, (5, 6, 7), 3)
