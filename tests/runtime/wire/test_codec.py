"""runtime/wire/codec.py field by field: what an unset field decodes to, every field across
the wire, identifier limits, payload and draft_probs shapes, malformed replies (each
with its exact code and message). The hidden rows: test_target_hidden_codec.py; the
client's timing fields: test_slo_timing.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.core.wire_limits import MIN_WIRE_FLOAT
from edgespec.runtime.compact_probs import CompactProbs
from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.messages import PROTOCOL_VERSION, SessionSpec, VerifyCall
from edgespec.runtime.validation import MAX_IDENTIFIER_CHARS
from edgespec.runtime.wire.codec import (
    call_from_proto,
    call_to_proto,
    pb,
    reply_from_proto,
    spec_from_proto,
    spec_to_proto,
)
from tests.runtime.bad_cases import raises_request_error

TOO_LONG = "x" * (MAX_IDENTIFIER_CHARS + 1)


def _open_request() -> Any:
    return pb.OpenSessionRequest(
        protocol_version=PROTOCOL_VERSION, session_id="s", sampling=pb.Sampling(max_new_tokens=4)
    )


def test_unset_open_session_fields_decode_to_the_defaults() -> None:
    # top_p 0 is read as 1, no seed is None (not 0), no SLO class / rule their defaults
    spec = spec_from_proto(_open_request())
    assert spec == SessionSpec("s", "", (), SamplingParams(max_new_tokens=4))
    assert (spec.sampling.top_p, spec.sampling.seed) == (1.0, None)
    assert (spec.sampling.top_k, spec.sampling.min_p) == (0, 0.0)  # no cut
    assert not spec.sampling.penalized and spec.num_prior_output_tokens == 0  # 0 read as 1
    assert (spec.slo_class, spec.verification_rule) == ("default", "exact")


def test_a_session_spec_crosses_the_wire_field_by_field() -> None:
    sampling = SamplingParams(temperature=0.75, top_p=0.5, max_new_tokens=9, seed=0, top_k=40,
                              min_p=0.125, ignore_eos=True,
                              logit_bias=((3, -2.5), (40, 100.0), (2**32 - 1, 0.1)),
                              repetition_penalty=1.1, frequency_penalty=-0.3,
                              presence_penalty=0.7)  # fmt: skip
    spec = SessionSpec("s", "c", (1, 2), sampling, "gold", True, "snr", num_prior_output_tokens=1)
    wire = pb.OpenSessionRequest.FromString(spec_to_proto(spec).SerializeToString())
    assert spec_from_proto(wire) == spec


def test_the_least_temperature_and_top_p_cross_the_wire_as_they_are() -> None:
    """Float32 carries both: the least accepted (2**-126) arrives unchanged; less is refused
    where it is given (1e-50 had reached the server as greedy, and a top_p of 1e-50, near
    greedy at the drafter, as unset, i.e. 1)."""
    least = SamplingParams(temperature=MIN_WIRE_FLOAT, top_p=MIN_WIRE_FLOAT, max_new_tokens=3)
    spec = SessionSpec("s", "c", (1,), least)
    wire = pb.OpenSessionRequest.FromString(spec_to_proto(spec).SerializeToString())
    assert spec_from_proto(wire).sampling == least
    assert pb.Sampling(temperature=1e-50, top_p=1e-50) == pb.Sampling()  # both 0: unset
    for name in ("temperature", "top_p"):
        with pytest.raises(ValueError) as caught:
            SamplingParams(**{name: 1e-50})  # type: ignore[arg-type]
        assert str(caught.value) == (
            f"{name} must not be below 1.175e-38 unless 0 (the wire's float32), got 1e-50"
        )
    request = _open_request()
    request.sampling.temperature = 1e-40  # a float32 subnormal, from some other client
    message = "sampling: temperature must not be below 1.175e-38 unless 0 (the wire's float32)"
    got = f", got {np.float32(1e-40):g}"
    raises_request_error(ErrorCode.INVALID_ARGUMENT, message + got, spec_from_proto, request)


@pytest.mark.parametrize("field", ["session_id", "client_id", "slo_class", "verification_rule"])
def test_open_session_identifiers_have_a_length_limit(field: str) -> None:
    request = _open_request()
    setattr(request, field, TOO_LONG)
    raises_request_error(
        ErrorCode.INVALID_ARGUMENT,
        f"{field} is {len(TOO_LONG)} characters; the limit is {MAX_IDENTIFIER_CHARS}",
        spec_from_proto,
        request,
    )


def test_draft_probs_and_payloads_keep_their_shape_and_float32() -> None:
    probs = np.array([[0.25, 0.75, 0.0], [1.0, 0.0, 0.0]], np.float32)  # K=2 x V=3
    csi = np.arange(6, dtype=np.float32).reshape(2, 3)
    call = VerifyCall("s", 3, (1, 2), probs, payloads={"csi": csi})
    back = call_from_proto(
        pb.VerifyRequest.FromString(call_to_proto(call).SerializeToString()), 3, 32
    )
    assert isinstance(back.draft_probs, CompactProbs)  # held as sent, never K x V
    assert back.draft_probs.values.dtype == np.float32
    np.testing.assert_array_equal(back.draft_probs.dense(), probs)
    assert back.payloads["csi"].shape == (2, 3) and back.payloads["csi"].dtype == np.float32
    np.testing.assert_array_equal(back.payloads["csi"], csi)


def test_an_empty_payload_keeps_its_shape() -> None:
    request = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1])
    request.payloads.add(name="rows", shape=[0, 640, 8], values=[])
    assert call_from_proto(request, 16, 32).payloads["rows"].shape == (0, 640, 8)


def _payload(name: str, shape: list[int], values: list[float]) -> Callable[[Any], None]:
    def add(request: Any) -> None:
        request.payloads.add(name=name, shape=shape, values=values)

    return add


def _probs_without_tokens(request: Any) -> None:
    del request.draft_token_ids[:]
    request.draft_probs.extend([0.5, 0.5])


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (_payload("", [1], [0.0]), "payload name '' is empty or repeated"),
        (
            _payload(TOO_LONG, [1], [0.0]),
            f"payload name is {len(TOO_LONG)} characters; the limit is {MAX_IDENTIFIER_CHARS}",
        ),
        (_payload("csi", [1], [1.0, 2.0]), "payload 'csi' has 2 values for shape [1]"),
        (  # 4096**4 = 2**48: the count is exact (np.prod would be too, here)
            _payload("csi", [4096] * 2, []),
            "payload 'csi' has 0 values for shape [4096, 4096]",
        ),
        (  # 65536**4 = 2**64 wraps to 0 in int64: refused by its size before any count
            _payload("csi", [65536] * 4, []),
            "payload 'csi' has shape [65536, 65536, 65536, 65536]: at most 8 dimensions whose "
            "nonzero sizes multiply to at most 16777216",
        ),
        (  # numpy cannot build it: "array is too big", though empty
            _payload("csi", [0, 2**31, 2**31, 2**31], []),
            "payload 'csi' has shape [0, 2147483648, 2147483648, 2147483648]: at most 8 "
            "dimensions whose nonzero sizes multiply to at most 16777216",
        ),
        (  # numpy's limit is 64 dimensions
            _payload("csi", [1] * 65, [0.0]),
            "payload 'csi' has shape [1, 1, 1, 1, 1, 1, 1, 1, 1] ...: at most 8 dimensions "
            "whose nonzero sizes multiply to at most 16777216",
        ),
        (
            _probs_without_tokens,
            "draft_probs has 2 values for an empty draft block (no draft tokens, no q)",
        ),
    ],
    ids=[
        "empty-payload-name",
        "long-payload-name",
        "too-many-values",
        "shape-without-its-values",
        "shape-past-int64",
        "empty-shape-numpy-cannot-build",
        "rank-65",
        "probs-without-tokens",
    ],
)
def test_malformed_verify_requests(spoil: Callable[[Any], None], message: str) -> None:
    request = pb.VerifyRequest(session_id="s", prefix_len=3, draft_token_ids=[1])
    spoil(request)
    raises_request_error(ErrorCode.INVALID_ARGUMENT, message, call_from_proto, request, 16, 32)


@pytest.mark.parametrize(
    ("num_accepted", "nodes"),
    [(1, [0, 2]), (2, [0, 3])],
    ids=["more-nodes-than-accepted", "node-past-the-draft"],
)
def test_accepted_nodes_must_name_num_accepted_draft_tokens(
    num_accepted: int, nodes: list[int]
) -> None:
    reply = pb.VerifyResponse(
        num_drafted=2, num_accepted=num_accepted, first_rejection=-1, extra_token=3
    )
    reply.accepted_nodes.extend(nodes)
    raises_request_error(
        ErrorCode.INTERNAL,
        f"malformed VerifyResponse: accepted_nodes {nodes} do not name "
        f"num_accepted={num_accepted} of the 3 draft tokens",
        reply_from_proto,
        reply,
        (4, 5, 6),
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("min_p", 1.5, "sampling: min_p must be in [0, 1] (0: no cut), got 1.5"),
        ("min_p", float("nan"), "sampling: min_p must be in [0, 1] (0: no cut), got nan"),
        ("min_p", -0.5, "sampling: min_p must be in [0, 1] (0: no cut), got -0.5"),
    ],
)
def test_a_cut_out_of_range_from_another_client_is_refused(
    field: str, value: float, message: str
) -> None:
    """The wire takes any float32 for min_p (and any uint32 for top_k, each a count of
    tokens): the server refuses what no sampler could mean."""
    request = _open_request()
    setattr(request.sampling, field, value)
    raises_request_error(ErrorCode.INVALID_ARGUMENT, message, spec_from_proto, request)
