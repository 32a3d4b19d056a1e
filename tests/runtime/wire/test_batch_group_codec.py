"""A verify call's batch group on the wire (runtime/wire/codec.py, runtime/validation.py):
``batch_id`` and ``batch_calls`` cross it as they are, an old client's call (neither set)
is not grouped, and each bound is refused with its exact message while the call is read."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.messages import VerifyCall
from edgespec.runtime.validation import MAX_BATCH_CALLS, MAX_BATCH_ID_BYTES
from edgespec.runtime.wire.codec import call_from_proto, call_to_proto, pb
from tests.runtime.bad_cases import raises_request_error


def _across(call: VerifyCall) -> VerifyCall:
    wire = pb.VerifyRequest.FromString(call_to_proto(call).SerializeToString())
    return call_from_proto(wire, 32, 8)


def test_the_group_fields_cross_the_wire() -> None:
    call = VerifyCall("s", 3, (1, 2), batch_id="run:7", batch_calls=4)
    back = _across(call)
    assert (back.batch_id, back.batch_calls) == ("run:7", 4)
    longest = "é" * (MAX_BATCH_ID_BYTES // 2)  # 128 bytes, 64 characters
    assert _across(VerifyCall("s", 3, (1,), batch_id=longest, batch_calls=MAX_BATCH_CALLS))
    assert (MAX_BATCH_ID_BYTES, MAX_BATCH_CALLS) == (128, 1024)


def test_a_call_without_them_is_not_grouped() -> None:
    back = call_from_proto(pb.VerifyRequest(session_id="s", prefix_len=1), 32, 8)
    assert (back.batch_id, back.batch_calls) == ("", 0)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"batch_id": "x" * 129, "batch_calls": 2}, "batch_id is 129 bytes; the limit is 128"),
        ({"batch_id": "é" * 65, "batch_calls": 2}, "batch_id is 130 bytes; the limit is 128"),
        ({"batch_id": "b", "batch_calls": 1025}, "batch_calls is 1025; the limit is 1024"),
        (
            {"batch_calls": 3},
            "batch_calls 3 needs a batch_id (the calls of one batch share it)",
        ),
    ],
)
def test_a_group_out_of_bounds_is_refused_naming_the_field(
    fields: dict[str, Any], message: str
) -> None:
    wire = pb.VerifyRequest(session_id="s", prefix_len=1, **fields)
    raises_request_error(ErrorCode.INVALID_ARGUMENT, message, call_from_proto, wire, 32, 8)
