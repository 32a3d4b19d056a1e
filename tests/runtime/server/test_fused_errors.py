"""Fused runs refused: a request the server cannot run (no co-located draft, a verifier
without fused runs), a bad prefix, γ or history count, and the server-side baselines' fused
mode without a draft or with a γ out of range; each with its exact code and message, the
session or server serving on."""

from __future__ import annotations

import dataclasses

import grpc
import pytest

from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.messages import FusedCall, SessionSpec
from edgespec.runtime.wire.codec import pb
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.grpc_common import pb_grpc
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode
from tests.runtime.bad_cases import raises_request_error
from tests.runtime.conftest import ServerFactory, start_server
from tests.runtime.fused_helpers import ALWAYS_FUSED, GREEDY, PROMPT, generate_at


def test_a_fused_request_to_a_server_without_a_draft_is_refused(
    target: TransformersTarget,
) -> None:
    server = start_server(target, window=ALWAYS_FUSED)  # no draft_factory
    try:
        raises_request_error(
            ErrorCode.FAILED_PRECONDITION,
            "fused rounds need a co-located draft model; this server was started without --draft",
            generate_at,
            server.port,
            "nodraft",
            ALWAYS_FUSED,
        )
        # the server goes on serving distributed sessions
        result = generate_at(server.port, "fine", StaticWindow(3))
        assert result.output_token_ids == target_greedy_decode(target, PROMPT, 16)
    finally:
        server.stop(grace_s=0)


def test_a_verifier_without_fused_runs_is_refused(target: TransformersTarget) -> None:
    raises_request_error(
        ErrorCode.FAILED_PRECONDITION,
        "window policy StaticWindow chose a fused round; verifier LocalVerifier cannot run "
        "fused rounds",
        speculative_generate,
        target,
        NgramDrafter(),
        PROMPT,
        ALWAYS_FUSED,
        GREEDY,
    )


def test_a_bad_prefix_or_gamma_is_refused(make_server: ServerFactory) -> None:
    server = make_server(max_draft_tokens=8)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    verifier.open(SessionSpec("s", "x", PROMPT, GREEDY))
    raises_request_error(
        ErrorCode.INVALID_ARGUMENT,
        "prefix_len 7 does not match session 's', which has 5 committed tokens",
        lambda: list(verifier.run_fused(FusedCall("s", 7, 3, HistorySnapshot()))),
    )
    raises_request_error(
        ErrorCode.INVALID_ARGUMENT,
        "fused gamma 9 outside 1..8",
        lambda: list(verifier.run_fused(FusedCall("s", 5, 9, HistorySnapshot()))),
    )
    raises_request_error(
        ErrorCode.NOT_FOUND,
        "unknown session 'gone'",
        lambda: list(verifier.run_fused(FusedCall("gone", 5, 3, HistorySnapshot()))),
    )
    # the session is intact: a fused run of one round (no server window) then continues
    (only,) = list(verifier.run_fused(FusedCall("s", 5, 3, HistorySnapshot())))
    assert only.end is not None and only.end.next_decision is None
    assert only.end.history.num_rounds == 1 and only.end.history.fused


PROMPT_LOGPROBS = "a fused Generate returns no prompt_logprobs: run it centralized, or verify it"
FUSED_LOGPROBS = "a fused Generate returns no logprobs: run it centralized, or verify it"


def test_a_fused_baseline_needs_a_draft_and_a_gamma_in_range(
    target: TransformersTarget, make_server: ServerFactory
) -> None:
    """Generate (the server-side baselines): fused mode on a server without --draft, and a
    fused γ outside 1..max_draft_tokens, are refused; centralized still streams."""
    plain = start_server(target)  # no draft_factory
    try:
        verifier = RemoteVerifier(f"127.0.0.1:{plain.port}")
        raises_request_error(
            ErrorCode.FAILED_PRECONDITION,
            "fused mode needs a server started with --draft",
            lambda: list(verifier.generate(SessionSpec("f", "x", PROMPT, GREEDY), fused=True)),
        )
        for fused, asks, said in (  # a centralized Generate carries both (test_prompt_logprobs)
            (True, dataclasses.replace(GREEDY, prompt_logprobs=0), PROMPT_LOGPROBS),
            (True, dataclasses.replace(GREEDY, logprobs=1), FUSED_LOGPROBS),
        ):
            spec = SessionSpec("l", "x", PROMPT, asks)
            raises_request_error(
                ErrorCode.INVALID_ARGUMENT,
                said,
                lambda spec=spec, fused=fused: list(verifier.generate(spec, fused=fused)),
            )
        chunks = list(verifier.generate(SessionSpec("c", "x", PROMPT, GREEDY)))
        assert tuple(t for chunk in chunks for t in chunk) == target_greedy_decode(
            target, PROMPT, 16
        )
    finally:
        plain.stop(grace_s=0)
    server = make_server(max_draft_tokens=8)
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    for gamma in (0, 9):
        spec = SessionSpec(f"g{gamma}", "x", PROMPT, GREEDY)
        raises_request_error(
            ErrorCode.INVALID_ARGUMENT,
            f"gamma {gamma} outside 1..8",
            lambda spec=spec, gamma=gamma: list(verifier.generate(spec, True, gamma)),
        )


@pytest.mark.parametrize("field", ["num_rounds", "num_committed_total"])
def test_a_history_count_past_the_wire_s_range_is_refused_before_any_round(
    make_server: ServerFactory, field: str
) -> None:
    server = make_server()
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
    verifier.open(SessionSpec("s", "x", PROMPT, GREEDY))
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        history = pb.HistorySnapshot(**{field: 2**32 - 1})
        request = pb.FusedRequest(session_id="s", prefix_len=5, gamma=3, history=history)
        with pytest.raises(grpc.RpcError) as info:
            list(pb_grpc.VerificationStub(channel).RunFused(request, timeout=30))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == (
        f"history snapshot: {field} must be an integer in [0, 2147483647], got 4294967295"
    )
    # nothing was committed: the session still has its 5 prompt tokens
    (only,) = list(verifier.run_fused(FusedCall("s", 5, 3, HistorySnapshot())))
    assert only.end is not None and only.end.history.num_rounds == 1
