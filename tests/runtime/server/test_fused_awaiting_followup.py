"""A fused run asked for a semantic session whose block awaits its SH follow-up (the server
asked for the draft's hidden states): refused up front, before the server drafts, and the
session's follow-up is then decided as if nothing had come between. The run drafted a
block, then its verification was refused ``INVALID_ARGUMENT`` ("resend that block")."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import DRAFT_HIDDEN, FusedCall, SemanticSpec, SessionSpec, VerifyCall
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.conftest import start_server
from tests.runtime.semantic_helpers import draft_coordinate_head, next_token, rows

PROMPT = (3, 1, 4, 1, 5)


def test_a_fused_run_on_a_session_awaiting_its_followup_is_refused_before_drafting(
    target: TransformersTarget, target_model: Any, draft_model: Any
) -> None:
    drafts: list[TransformersDraft] = []

    def draft() -> TransformersDraft:
        drafts.append(TransformersDraft(draft_model))
        return drafts[-1]

    rules = semantic_rules(draft_coordinate_head())
    server = start_server(target, draft, rules=rules)
    try:
        verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
        semantic = SemanticSpec(12, 20e6)
        spec = SessionSpec("s", "c", PROMPT, SamplingParams(max_new_tokens=8),
                           verification_rule="semantic", semantic=semantic)  # fmt: skip
        verifier.open(spec)
        block = tuple((next_token(target_model, PROMPT) + 1 + j) % 64 for j in range(4))
        asked = verifier.verify(VerifyCall("s", len(PROMPT), block)).outcome.hidden_request
        assert asked is not None and asked[:2] == (0, 1)
        with pytest.raises(RequestError) as info:
            list(verifier.run_fused(FusedCall("s", len(PROMPT), 2, HistorySnapshot())))
        signs = rows(-1.0, +1.0, -1.0, -1.0)  # mismatch 0 accepted, mismatch 1 rejected
        followup = VerifyCall("s", len(PROMPT), block, payloads={DRAFT_HIDDEN: signs[list(asked)]})
        decided = verifier.verify(followup).outcome
    finally:
        server.stop(grace_s=0)
    assert (info.value.code, info.value.message) == (
        ErrorCode.FAILED_PRECONDITION,
        f"session 's' awaits the hidden-state follow-up of its block at prefix_len 5: send it "
        f"(the block again, with payload 'draft_hidden' holding the draft hidden states of "
        f"positions {list(asked)}) before a fused run",
    )
    assert drafts == []  # refused before any draft was made
    assert len(decided.committed_token_ids) == 2 and decided.committed_token_ids[0] == block[0]
