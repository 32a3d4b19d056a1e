"""Malformed requests over the wire: each gets its exact status and message, and the
server keeps serving everyone else (fuzzed requests included)."""

from __future__ import annotations

import grpc
import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.messages import PROTOCOL_VERSION, SessionSpec, VerifyCall
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import GREEDY, PROMPT, raises_request_error
from tests.runtime.conftest import ServerFactory


def test_malformed_requests_are_rejected_and_others_still_served(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    server = make_server(max_draft_tokens=8)
    bad = RemoteVerifier(f"127.0.0.1:{server.port}")
    bad.open(SessionSpec("bad", "evil", PROMPT, GREEDY))
    n = len(PROMPT)
    invalid = ErrorCode.INVALID_ARGUMENT
    cases = [
        (
            VerifyCall("bad", n, (1, 999)),
            invalid,
            "draft token 1 (id 999) is outside the vocabulary [0, 64)",
        ),
        (VerifyCall("bad", n, (1,) * 9), invalid, "draft block has 9 tokens; the limit is 8"),
        (
            VerifyCall("bad", n + 3, (1,)),
            invalid,
            "prefix_len 11 does not match session 'bad', which has 8 committed tokens",
        ),
        (VerifyCall("ghost", n, (1,)), ErrorCode.NOT_FOUND, "unknown session 'ghost'"),
    ]
    for call, code, message in cases:
        raises_request_error(code, message, bad.verify, call)
    raises_request_error(
        invalid,
        "prompt token 0 (id 64) is outside the vocabulary [0, 64)",
        bad.open,
        SessionSpec("bad2", "evil", (64,), GREEDY),
    )
    raises_request_error(
        invalid, "session 'bad' already exists", bad.open, SessionSpec("bad", "e", PROMPT, GREEDY)
    )
    raises_request_error(
        invalid, "stochastic verification needs draft_probs", _stochastic_without_probs, bad
    )
    # the server keeps serving a well-behaved client, losslessly
    good = generate(
        RemoteVerifier(f"127.0.0.1:{server.port}"),
        NgramDrafter(),
        PROMPT,
        GREEDY,
        DraftOptions(session_id="good"),
    )
    assert good.output_token_ids == target_greedy_decode(target, PROMPT, 20)
    assert bad.stats().num_rejected == 7


def _stochastic_without_probs(verifier: RemoteVerifier) -> None:
    verifier.open(SessionSpec("sto", "x", PROMPT, SamplingParams(temperature=1.0, seed=1)))
    verifier.verify(VerifyCall("sto", len(PROMPT), (1, 2)))


@pytest.mark.parametrize(
    ("temperature", "top_p", "message"),
    [
        (float("nan"), 1.0, "sampling: temperature must be finite and >= 0, got nan"),
        (float("inf"), 1.0, "sampling: temperature must be finite and >= 0, got inf"),
        (0.7, -0.5, "sampling: top_p must be in (0, 1], got -0.5"),
        (0.7, float("nan"), "sampling: top_p must be in (0, 1], got nan"),
    ],
)
def test_sampling_inputs_are_validated_over_the_wire(
    make_server: ServerFactory, temperature: float, top_p: float, message: str
) -> None:
    server = make_server()
    stub = pb_grpc.VerificationStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    sampling = pb.Sampling(temperature=temperature, top_p=top_p, max_new_tokens=4)
    request = pb.OpenSessionRequest(
        protocol_version=PROTOCOL_VERSION,
        session_id="t",
        prompt_token_ids=[1, 2],
        sampling=sampling,
    )
    with pytest.raises(grpc.RpcError) as info:
        stub.OpenSession(request)
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        message,
    )


@pytest.mark.parametrize("row_sum", [64.0, 6e-29, 2e40])
def test_draft_distributions_must_sum_to_one(make_server: ServerFactory, row_sum: float) -> None:
    server = make_server()
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    sampled = SamplingParams(temperature=0.8, max_new_tokens=8, seed=1)
    verifier.open(SessionSpec("p", "x", PROMPT, sampled))
    probs = np.full((1, 64), row_sum / 64, dtype=np.float32)
    total = float(probs.sum(dtype=np.float64))
    raises_request_error(
        ErrorCode.INVALID_ARGUMENT,
        f"draft_probs row 0 sums to {total:.6g}; a distribution sums to 1 (within 0.001)",
        verifier.verify,
        VerifyCall("p", len(PROMPT), (3,), probs),
    )


def test_identifiers_have_a_length_limit(make_server: ServerFactory) -> None:
    server = make_server()
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    huge = "x" * 100_000
    message = "session_id is 100000 characters; the limit is 128"
    raises_request_error(
        ErrorCode.INVALID_ARGUMENT, message, verifier.verify, VerifyCall(huge, 1, (1,))
    )
    spec = SessionSpec("ok", "c" * 129, PROMPT, GREEDY)
    raises_request_error(
        ErrorCode.INVALID_ARGUMENT,
        "client_id is 129 characters; the limit is 128",
        verifier.open,
        spec,
    )


def test_fuzzed_requests_get_clear_codes_and_the_server_keeps_serving(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    """Seeded fuzz: random bytes and byte-flipped valid messages to every unary method."""
    server = make_server()
    address = f"127.0.0.1:{server.port}"
    channel = grpc.insecure_channel(address)
    rng = np.random.default_rng(0)
    valid = {
        "OpenSession": pb.OpenSessionRequest(
            protocol_version=PROTOCOL_VERSION, session_id="f", prompt_token_ids=[1, 2, 3],
            sampling=pb.Sampling(max_new_tokens=4),
        ).SerializeToString(),
        "Verify": pb.VerifyRequest(
            session_id="f", prefix_len=3, draft_token_ids=[4, 5]
        ).SerializeToString(),
        "CloseSession": pb.CloseSessionRequest(session_id="f").SerializeToString(),
        "Stats": b"",
        "Health": b"",
    }  # fmt: skip
    allowed = {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
    undecodable = 0
    for i in range(150):
        method = list(valid)[i % len(valid)]
        data = bytearray(valid[method] or rng.bytes(8))
        if i % 3 == 0:
            data = bytearray(rng.bytes(int(rng.integers(1, 40))))
        else:
            for _ in range(int(rng.integers(1, 4))):
                data[int(rng.integers(len(data)))] = int(rng.integers(256))
        call = channel.unary_unary(f"/edgespec.v1.Verification/{method}")
        try:
            call(bytes(data), timeout=5)
        except grpc.RpcError as exc:
            assert exc.code() in allowed, (method, bytes(data), exc.code(), exc.details())
            undecodable += "undecodable" in (exc.details() or "")
    assert undecodable > 0  # some bytes did not parse, and said so
    verifier = RemoteVerifier(address)
    result = generate(verifier, NgramDrafter(), PROMPT, GREEDY, DraftOptions("after-fuzz"))
    assert result.output_token_ids == target_greedy_decode(target, PROMPT, 20)
