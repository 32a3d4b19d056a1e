"""Malformed draft hidden states sent to a semantic session over loopback gRPC: each is
refused with the exact reason (shape, row count, non-finite value, a follow-up that is not
the one asked for), while that session and an exact one beside it go on to the end. The SH
call sent again without hidden states (its reply lost) is asked again, not refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import DRAFT_HIDDEN, SemanticSpec, SessionSpec, VerifyCall
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.semantic_helpers import draft_coordinate_head, next_token, rows
from tests.runtime.server.semantic_engine import PROMPT
from tests.runtime.server.semantic_remote import remote as _remote


def _error(verifier: RemoteVerifier, call: VerifyCall) -> tuple[ErrorCode, str]:
    with pytest.raises(RequestError) as info:
        verifier.verify(call)
    return info.value.code, info.value.message


def test_malformed_hidden_states_are_refused_and_every_session_goes_on(
    serve: Any, target: TransformersTarget, target_model: Any, draft_model: Any
) -> None:
    server = serve(draft_coordinate_head())
    verifier = _remote(server)
    spec = SemanticSpec(12, 20e6)
    verifier.open(
        SessionSpec(
            "a",
            "c",
            PROMPT,
            SamplingParams(max_new_tokens=8),
            verification_rule="semantic",
            semantic=spec,
        )
    )
    other = _remote(server)  # an exact session, mid-generation
    other.open(SessionSpec("b", "c", PROMPT, SamplingParams(max_new_tokens=8)))
    first = other.verify(VerifyCall("b", len(PROMPT), ()))
    best = next_token(target_model, PROMPT)
    block = ((best + 1) % 64, 7, 9)  # a mismatch first
    n = len(PROMPT)
    bad = [
        (
            VerifyCall("a", n, block, payloads={DRAFT_HIDDEN: np.zeros((3, 16), np.float32)}),
            "draft_hidden has shape [3, 16]; the server's decision head "
            "takes draft hidden states of width 32 (rows x 32)",
        ),
        (
            VerifyCall("a", n, block, payloads={DRAFT_HIDDEN: rows(1, 1)}),
            "draft_hidden has 2 rows for 3 draft tokens: an FH call "
            "sends one row per draft token, an SH call none (the server asks for the rows "
            "it needs)",
        ),
        (
            VerifyCall("a", n, block, payloads={DRAFT_HIDDEN: rows(1, np.nan, 1)}),
            "draft_hidden row 1 (draft position 1) has a non-finite value",
        ),
    ]
    for call, message in bad:
        assert _error(verifier, call) == (ErrorCode.INVALID_ARGUMENT, message)
    asked = verifier.verify(VerifyCall("a", n, block))  # SH: the server asks
    positions = asked.outcome.hidden_request
    assert positions is not None and positions[0] == 0 and asked.outcome.committed_token_ids == ()
    again = verifier.verify(VerifyCall("a", n, block))  # sent again: asked again
    assert again.outcome == asked.outcome
    unnamed = {"channel_state": rows(*[1] * len(positions))}  # not the payload asked for
    assert _error(verifier, VerifyCall("a", n, block, payloads=unnamed)) == (
        ErrorCode.INVALID_ARGUMENT,
        "verification rule 'semantic' takes no payload(s) ['channel_state']; it takes "
        "['draft_hidden']",
    )
    code, message = _error(
        verifier, VerifyCall("a", n, block[:1], payloads={DRAFT_HIDDEN: rows(1)})
    )
    assert code is ErrorCode.INVALID_ARGUMENT and "resend that block" in message
    code, message = _error(
        verifier,
        VerifyCall("a", n, block, payloads={DRAFT_HIDDEN: rows(*[1] * (len(positions) + 1))}),
    )
    assert code is ErrorCode.INVALID_ARGUMENT
    assert "the server asked for the hidden states of positions" in message
    # the exact session went on meanwhile, and finishes as the target alone would
    context = (*PROMPT, *first.outcome.committed_token_ids)
    rest = generate(
        other,
        TransformersDraft(draft_model),
        context,
        SamplingParams(max_new_tokens=7),
        DraftOptions("b2"),
    )
    reference = target_greedy_decode(target, PROMPT, 8)
    assert (*first.outcome.committed_token_ids, *rest.output_token_ids) == reference
    # and so does the semantic one: its follow-up is decided (+1: the head rejects)
    done = verifier.verify(
        VerifyCall("a", n, block, payloads={DRAFT_HIDDEN: rows(*[1] * len(positions))})
    )
    assert done.outcome.committed_token_ids == (best,)
    assert server.service is not None and server.service.stats().num_rejected == 6
