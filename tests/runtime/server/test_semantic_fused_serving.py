"""Fused rounds (the server's co-located draft) of a semantic session over loopback gRPC:
the draft's own hidden states reach the session's rule, and a draft narrower than the
decision head is refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.semantic.head import DecisionHead
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, FusedRound, SemanticSpec, SessionSpec
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.runtime.semantic_helpers import HIDDEN, accept_all_reference, constant_head
from tests.runtime.server.semantic_engine import PROMPT
from tests.runtime.server.semantic_remote import GAMMA, MAX_NEW
from tests.runtime.server.semantic_remote import remote as _remote


def _fused_round(server: ServerThread, sid: str, threshold: int, gamma: int) -> FusedRound:
    """One fused round of a fresh semantic session (no server window: one round a run)."""
    verifier = _remote(server)
    spec = SessionSpec(
        sid, "c", PROMPT, SamplingParams(max_new_tokens=MAX_NEW),
        verification_rule="semantic", semantic=SemanticSpec(threshold, 20e6),
    )  # fmt: skip
    verifier.open(spec)
    (played,) = list(verifier.run_fused(FusedCall(sid, len(PROMPT), gamma, HistorySnapshot())))
    return played


def test_fused_rounds_of_a_semantic_session_verify_semantically(
    target: TransformersTarget, target_model: Any, draft_model: Any
) -> None:
    """AWC may move a semantic session to fused rounds: the server's co-located draft hands
    its own hidden states to the session's rule (no upload), so a head that never rejects
    commits the draft's γ tokens and the bonus, and threshold 0 stays greedy."""
    server = start_server(
        target, lambda: TransformersDraft(draft_model), rules=semantic_rules(constant_head(-20.0))
    )
    try:
        lossy = _fused_round(server, "lossy", 12, GAMMA)
        exact = _fused_round(server, "greedy", 0, GAMMA)
    finally:
        server.stop(grace_s=0)
    expected = accept_all_reference(target_model, draft_model, PROMPT, GAMMA, MAX_NEW)
    assert lossy.reply.outcome.committed_token_ids == expected[: GAMMA + 1]
    greedy = target_greedy_decode(target, PROMPT, MAX_NEW)
    committed = exact.reply.outcome.committed_token_ids
    assert committed == greedy[: len(committed)]


def test_fused_rounds_need_a_draft_of_the_heads_width(
    target: TransformersTarget, draft_model: Any
) -> None:
    narrow = DecisionHead(
        16, HIDDEN, np.zeros(16 + HIDDEN + 4), np.ones(16 + HIDDEN + 4),
        np.zeros((16 + HIDDEN + 4, 1)), np.zeros(1), np.zeros((1, 1)), np.zeros(1),
    )  # fmt: skip
    server = start_server(
        target, lambda: TransformersDraft(draft_model), rules=semantic_rules(narrow)
    )
    try:
        with pytest.raises(RequestError) as info:
            _fused_round(server, "f", 12, 3)
    finally:
        server.stop(grace_s=0)
    assert (info.value.code, info.value.message) == (
        ErrorCode.FAILED_PRECONDITION,
        "fused rounds of semantic session 'f': the server's draft has hidden size 32, the "
        "decision head takes draft hidden states of width 16",
    )
