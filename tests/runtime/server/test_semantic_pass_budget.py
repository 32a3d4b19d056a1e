"""Whether an SH pass that lost its ``return_hidden`` rows to the budget may be sent again is
judged on what the pass alone holds (its KV and its own rows), as the same block sent again
would: the session's rows kept of its last round, which the eviction drops too, were
counted as well, so a pass that fits was refused for good (``FAILED_PRECONDITION``, "sent
again it would not fit either", where the drafter gives up) while sent again it was
decided. A server review found it."""

from __future__ import annotations

from typing import Any

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import DRAFT_HIDDEN, SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.semantic import semantic_rules
from tests.runtime.semantic_helpers import draft_coordinate_head, next_token, rows
from tests.runtime.server.semantic_engine import GOOD

LONG = tuple((7 * i + 3) % 64 for i in range(400))
BUDGET = 800  # the prompt's KV and its 400 kept reply rows fit; with the next pass, not


def _run(engine: VerificationEngine, call: VerifyCall) -> VerifyOutcome | RequestError:
    engine.validate(call, 16)
    (out,) = engine.verify_batch([call])
    assert isinstance(out, VerifyOutcome | RequestError)  # no prefill in parts here
    return out


def test_a_pass_that_fits_alone_is_aborted_and_decided_when_sent_again(
    target: TransformersTarget, target_model: Any
) -> None:
    engine = VerificationEngine(target, kv_budget_tokens=BUDGET,
                                rules=semantic_rules(draft_coordinate_head()))  # fmt: skip
    engine.open_session(SessionSpec("sh", "c", LONG, SamplingParams(max_new_tokens=16),
                                    return_hidden=True, verification_rule="semantic",
                                    semantic=GOOD))  # fmt: skip
    first = _run(engine, VerifyCall("sh", len(LONG), ()))
    assert isinstance(first, VerifyOutcome) and first.target_hidden is not None
    assert first.target_hidden.shape[0] == len(LONG)  # the prompt's rows, kept for a retry
    context = LONG + first.committed_token_ids
    block = tuple(
        (next_token(target_model, context) + 1 + j) % 64 for j in range(4)
    )  # 0 mismatches
    waiting = _run(engine, VerifyCall("sh", len(context), block))
    assert isinstance(waiting, VerifyOutcome) and waiting.hidden_request
    hidden = rows(*[-1.0] * len(waiting.hidden_request))
    followup = VerifyCall("sh", len(context), block, payloads={DRAFT_HIDDEN: hidden})
    refused = _run(engine, followup)
    assert isinstance(refused, RequestError)
    assert refused.code is ErrorCode.ABORTED, refused.message  # was FAILED_PRECONDITION
    assert "nothing was committed: send the block again" in refused.message
    again = _run(engine, VerifyCall("sh", len(context), block))
    assert isinstance(again, VerifyOutcome) and again.hidden_request == waiting.hidden_request
    decided = _run(engine, followup)
    assert isinstance(decided, VerifyOutcome) and decided.committed_token_ids
