"""The target's hidden rows on the wire: float16 round trip and malformed payloads
(the rest of the opt-in hidden states: test_target_hidden.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyOutcome, VerifyReply
from edgespec.runtime.wire.codec import (
    hidden_to_bytes,
    pb,
    reply_from_proto,
    reply_to_proto,
    spec_from_proto,
    spec_to_proto,
)

GREEDY = SamplingParams(max_new_tokens=24)


def _reply(hidden: Any, start: int = 0) -> VerifyReply:
    from edgespec.core.types import VerifyResult

    result = VerifyResult(2, 1, 1, 9, (4,))
    return VerifyReply(VerifyOutcome(result, (4, 9), False, 3, hidden, start), 0.0, 0.0, 1)


def test_codec_round_trips_hidden_rows_as_float16() -> None:
    rows = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)
    rows[0, 0], rows[1, 0] = 1e6, -1e6  # beyond float16: clipped, not inf
    msg = reply_to_proto(_reply(rows, start=7))
    assert len(msg.target_hidden) == 3 * 5 * 2 and msg.hidden_size == 5
    assert msg.target_hidden_start == 7
    back = reply_from_proto(msg, (4, 5), prefix_len=8).outcome
    assert back.target_hidden is not None and back.target_hidden.dtype == np.float32
    assert back.target_hidden_start == 7
    assert np.isfinite(back.target_hidden).all()
    assert back.target_hidden[:2, 0].tolist() == [65504.0, -65504.0]  # float16's max
    np.testing.assert_allclose(back.target_hidden[:, 1:], rows[:, 1:], rtol=1e-3, atol=1e-3)
    plain = reply_to_proto(_reply(None))
    assert (
        plain.target_hidden == b"" and reply_from_proto(plain, (4, 5)).outcome.target_hidden is None
    )
    spec = SessionSpec("s", "c", (1, 2), GREEDY, return_hidden=True)
    assert spec_from_proto(spec_to_proto(spec)).return_hidden
    assert not spec_from_proto(spec_to_proto(SessionSpec("s", "c", (1,), GREEDY))).return_hidden


@pytest.mark.parametrize(
    ("payload", "hidden_size", "message"),
    [
        (b"\x00" * 10, 4, "target_hidden has 10 bytes, not rows x hidden_size (4) x 2"),
        (b"\x00" * 8, 0, "target_hidden has 8 bytes, not rows x hidden_size (0) x 2"),
        (b"\x00" * 6, 2, "target_hidden has 6 bytes, not rows x hidden_size (2) x 2"),
    ],
    ids=["odd-length", "no-hidden-size", "half-a-row"],
)
def test_codec_rejects_a_malformed_hidden_payload(
    payload: bytes, hidden_size: int, message: str
) -> None:
    msg = pb.VerifyResponse(
        num_drafted=2, num_accepted=1, first_rejection=1, extra_token=9, committed_token_ids=[4, 9]
    )
    msg.target_hidden, msg.hidden_size = payload, hidden_size
    with pytest.raises(RequestError) as info:
        reply_from_proto(msg, (4, 5))
    assert info.value.code is ErrorCode.INTERNAL
    assert info.value.message == f"malformed VerifyResponse: {message} (float16)"


def test_codec_rejects_rows_beyond_the_committed_sequence() -> None:
    data, size = hidden_to_bytes(np.zeros((4, 3), np.float32))
    msg = pb.VerifyResponse(
        num_drafted=2, num_accepted=1, first_rejection=1, extra_token=9, committed_token_ids=[4, 9]
    )
    msg.target_hidden, msg.hidden_size, msg.target_hidden_start = data, size, 7
    with pytest.raises(RequestError, match="4 hidden rows from position 7 run past the 10"):
        reply_from_proto(msg, (4, 5), prefix_len=8)


def test_hidden_rows_must_be_2d() -> None:
    with pytest.raises(ValueError) as info:
        hidden_to_bytes(np.zeros(3, np.float32))
    assert str(info.value) == "hidden rows must be 2-D (rows x hidden_size), got shape (3,)"
