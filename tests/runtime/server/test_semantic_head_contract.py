"""A decision head whose answer breaks its contract (not one bool per mismatch) on the real
server: the semantic rule refuses it with the shared check's one-line PolicyContractError
(a wrong length was a bare ``zip`` ValueError, a 2-D or float answer was read as it came),
the engine fails that call with ``INTERNAL`` naming the head, and every other session,
and the failing one's next call, go on."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgespec.policies.contracts import PolicyContractError
from edgespec.runtime.backends.logit_rows import HostRows
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import DRAFT_HIDDEN, SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.semantic import SemanticVerification
from tests.policies.semantic.broken_heads import (
    BROKEN_ANSWERS,
    BrokenHead,
    broken_head,
    contract_message,
)
from tests.runtime.semantic_helpers import constant_head, next_token, rows
from tests.runtime.server.semantic_engine import GOOD, GREEDY, PROMPT, open_semantic
from tests.runtime.server.semantic_engine import semantic_engine as _engine


@pytest.mark.parametrize("name", sorted(BROKEN_ANSWERS))
def test_the_rule_refuses_an_answer_out_of_contract(name: str) -> None:
    """Draft 5 3 9 against the target's 5 4 8 (+ bonus 7): mismatches at 1 and 2."""
    spec = SessionSpec("s", "c", PROMPT, GREEDY, verification_rule="semantic", semantic=GOOD)
    rule = SemanticVerification(broken_head(name)).bind(spec)
    logits = np.zeros((4, 16), dtype=np.float32)
    logits[np.arange(4), [5, 4, 8, 7]] = 1.0
    call = VerifyCall("s", len(PROMPT), (5, 3, 9), payloads={DRAFT_HIDDEN: np.ones((3, 8))})
    target_hidden = np.ones((4, 12), dtype=np.float32)
    with pytest.raises(PolicyContractError) as caught:
        rule.verdict_hidden(call, GREEDY, HostRows(logits), target_hidden)
    assert str(caught.value) == contract_message(name, 2)


def _verify(engine: Any, calls: list[VerifyCall]) -> list[VerifyOutcome | RequestError]:
    for call in calls:
        engine.validate(call, 16)
    return list(engine.verify_batch(calls))


def test_the_engine_fails_only_that_call_and_serves_the_others(
    target: TransformersTarget, target_model: Any
) -> None:
    too_many = BROKEN_ANSWERS["one too many"][0]
    engine = _engine(target, BrokenHead(constant_head(-3.0), too_many))
    open_semantic(engine, "bad")
    open_semantic(engine, "exact", None)
    best = next_token(target_model, PROMPT)
    miss = VerifyCall("bad", len(PROMPT), ((best + 1) % 64,), payloads={DRAFT_HIDDEN: rows(-1)})
    bad, exact = _verify(engine, [miss, VerifyCall("exact", len(PROMPT), (best,))])
    assert isinstance(bad, RequestError) and bad.code is ErrorCode.INTERNAL
    assert bad.message == (
        "verification rule 'semantic' failed: decision head BrokenHead returned a bool "
        "array of shape (2,) for 1 mismatch; expected a 1-D bool array of shape (1,), one "
        "bool per mismatch"
    )
    assert isinstance(exact, VerifyOutcome) and exact.committed_token_ids[0] == best
    assert engine.session_tokens("bad") == PROMPT  # nothing committed, the session lives
    # a block without a mismatch never asks the head: the failing session goes on
    (again,) = _verify(
        engine, [VerifyCall("bad", len(PROMPT), (best,), payloads={DRAFT_HIDDEN: rows(-1)})]
    )
    assert isinstance(again, VerifyOutcome) and again.committed_token_ids[0] == best
