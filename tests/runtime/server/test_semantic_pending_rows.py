"""What an SH session's kept pass holds while it waits for the follow-up (up to the 300 s
expiry): the target's hidden rows of its K + 1 logit rows, owned, not the rows of every
forwarded token (a first round or re-prefill forwards the whole context: 32,768 x 640
floats, 84 MB at Gemma 3 270M), unless the session asked for hidden states
(``return_hidden``: its reply carries them). Those count against ``kv_budget_tokens``, a
row a token; evicted, the follow-up is refused (``ABORTED``), nothing committed, and the
block sent again gets the same reply. The outputs are those of the FH path."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import DRAFT_HIDDEN, SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.hidden_followup import PendingHidden
from edgespec.runtime.server.semantic import semantic_rules
from tests.runtime.semantic_helpers import HIDDEN, draft_coordinate_head, next_token, rows
from tests.runtime.server.semantic_engine import GOOD, GREEDY
from tests.runtime.server.test_semantic_rule import _verify

LONG = tuple((7 * i + 3) % 64 for i in range(400))
SIGNS = (-1.0, +1.0, -1.0, -1.0)  # mismatch 0 accepted, mismatch 1 rejected


def _setup(
    target: TransformersTarget, target_model: Any, return_hidden: bool, budget: int = 65536
) -> tuple[VerificationEngine, tuple[int, ...]]:
    """An engine with an SH and an FH session on LONG, and a block mismatching everywhere."""
    rules = semantic_rules(draft_coordinate_head())
    engine = VerificationEngine(target, kv_budget_tokens=budget, rules=rules)
    for sid in ("sh", "fh"):
        spec = SessionSpec(sid, "c", LONG, GREEDY, return_hidden=return_hidden,
                           verification_rule="semantic", semantic=GOOD)  # fmt: skip
        engine.open_session(spec)
    return engine, tuple((next_token(target_model, LONG) + 1 + j) % 64 for j in range(4))


def _sh_round(engine: VerificationEngine, block: tuple[int, ...]) -> tuple[PendingHidden, Any]:
    """The SH session's waiting pass, then its decided follow-up."""
    first = _verify(engine, VerifyCall("sh", len(LONG), block))
    assert first.hidden_request is not None and first.committed_token_ids == ()
    pending = engine._sessions["sh"].pending
    assert pending is not None
    wanted = rows(*SIGNS)[list(first.hidden_request)]
    call = VerifyCall("sh", len(LONG), block, payloads={DRAFT_HIDDEN: wanted})
    return pending, _verify(engine, call)


def _fh(engine: VerificationEngine, block: tuple[int, ...]) -> VerifyOutcome:
    return _verify(
        engine, VerifyCall("fh", len(LONG), block, payloads={DRAFT_HIDDEN: rows(*SIGNS)})
    )


def test_a_waiting_pass_holds_its_k_plus_1_hidden_rows_not_the_prompts(
    target: TransformersTarget, target_model: Any
) -> None:
    engine, block = _setup(target, target_model, return_hidden=False)
    pending, decided = _sh_round(engine, block)
    assert pending.positions[:2] == (0, 1)
    assert pending.out.hidden is None  # was 404 x 32: the prompt and the block
    assert pending.target_hidden.shape == (len(block) + 1, HIDDEN)
    assert pending.target_hidden.base is None  # owned, not a view of the 404 rows
    reference = _fh(engine, block)
    assert decided.committed_token_ids == reference.committed_token_ids
    assert len(decided.committed_token_ids) == 2 and decided.committed_token_ids[0] == block[0]
    assert decided.target_hidden is None and decided.accepted_mismatches == 1


def test_a_return_hidden_session_waiting_keeps_the_rows_its_reply_carries(
    target: TransformersTarget, target_model: Any
) -> None:
    engine, block = _setup(target, target_model, return_hidden=True)
    pending, decided = _sh_round(engine, block)
    assert pending.out.hidden is not None
    assert pending.out.hidden.shape == (len(LONG) + len(block), HIDDEN)
    assert pending.target_hidden.shape == (len(block) + 1, HIDDEN)
    reference = _fh(engine, block)
    assert decided.committed_token_ids == reference.committed_token_ids
    assert decided.target_hidden is not None and reference.target_hidden is not None
    assert decided.target_hidden.shape == (len(LONG) + 1, HIDDEN)  # context + accepted
    assert np.array_equal(decided.target_hidden, reference.target_hidden)


def test_a_return_hidden_pass_waiting_counts_in_the_budget_and_evicted_is_sent_again(
    target: TransformersTarget, target_model: Any
) -> None:
    """The waiting pass holds 404 KV tokens and 404 hidden rows: 808 of a 1,000 budget. A
    plain session's 251 more evict it (with its rows uncounted, 655 fit and nothing went)."""
    engine, block = _setup(target, target_model, return_hidden=True, budget=1000)
    _, roomy = _sh_round(_setup(target, target_model, return_hidden=True)[0], block)
    first = _verify(engine, VerifyCall("sh", len(LONG), block))
    assert first.hidden_request is not None
    assert engine.counters().num_cached_tokens == len(LONG) + len(block)
    engine.open_session(SessionSpec("p", "c", LONG[:250], SamplingParams(max_new_tokens=4)))
    _verify(engine, VerifyCall("p", 250, (1,)))
    assert engine.counters().num_evictions == 1  # the oldest: the waiting pass
    wanted = rows(*SIGNS)[list(first.hidden_request)]
    followup = VerifyCall("sh", len(LONG), block, payloads={DRAFT_HIDDEN: wanted})
    engine.validate(followup, 16)
    (refused,) = engine.verify_batch([followup])
    assert isinstance(refused, RequestError) and refused.code is ErrorCode.ABORTED
    assert refused.message == (
        f"session 'sh': the pass of its block at prefix_len {len(LONG)}, waiting for draft "
        f"hidden states, lost its {len(LONG) + len(block)} target hidden rows (return_hidden) "
        "under kv_budget_tokens; nothing was committed: send the block again"
    )
    assert engine.session_tokens("sh") == LONG  # nothing committed
    again = _verify(engine, VerifyCall("sh", len(LONG), block))  # re-prefilled, waits again
    assert again.hidden_request == first.hidden_request
    decided = _verify(engine, followup)
    assert decided.committed_token_ids == roomy.committed_token_ids
    assert decided.target_hidden is not None and roomy.target_hidden is not None
    assert np.array_equal(decided.target_hidden, roomy.target_hidden)
    assert engine.session_tokens("sh") == LONG + decided.committed_token_ids


def test_a_return_hidden_pass_over_the_budget_alone_is_refused_for_good(
    target: TransformersTarget, target_model: Any
) -> None:
    """808 tokens held on a budget of 800: evicted as soon as it waits, and sent again it
    would hold as much. It was ABORTED, and the edge drafter played it again until its
    progress budget ran out; now the refusal is final and says what would fit."""
    engine, block = _setup(target, target_model, return_hidden=True, budget=800)
    first = _verify(engine, VerifyCall("sh", len(LONG), block))
    assert first.hidden_request is not None
    assert engine.counters().num_evictions == 1  # its own pass, at once
    wanted = rows(*SIGNS)[list(first.hidden_request)]
    followup = VerifyCall("sh", len(LONG), block, payloads={DRAFT_HIDDEN: wanted})
    engine.validate(followup, 16)
    (refused,) = engine.verify_batch([followup])
    assert isinstance(refused, RequestError) and refused.code is ErrorCode.FAILED_PRECONDITION
    held = 2 * (len(LONG) + len(block))
    assert refused.message == (
        f"session 'sh': the pass of its block at prefix_len {len(LONG)}, waiting for draft "
        f"hidden states, held {held} tokens (KV and {len(LONG) + len(block)} target hidden "
        "rows, return_hidden), over kv_budget_tokens 800 alone: sent again it would not fit "
        "either; nothing was committed (raise kv_budget_tokens, or draft without target "
        "hidden states)"
    )
    assert engine.session_tokens("sh") == LONG  # nothing committed
