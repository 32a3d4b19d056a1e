"""A semantic session waiting for its SH follow-up holds its kept pass's KV in the engine's
LRU budget: the pass counts in the cached tokens while it waits, and under a budget too
small to keep it the pass's KV is evicted, the follow-up is still decided from the kept
rows and the session re-prefills, with the same output, round for round."""

from __future__ import annotations

from typing import Any

from edgespec.core.types import SamplingParams
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.edge.semantic import SemanticRequest
from edgespec.runtime.messages import VerifyCall, VerifyReply
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.wire.inprocess import LocalVerifier
from tests.runtime.semantic_helpers import draft_coordinate_head

PROMPT = (3, 1, 4, 1, 5)
MAX_NEW = 40
GAMMA = 4


class _Watching(LocalVerifier):
    """A local verifier that records, after each reply asking for hidden states, the
    engine's cached tokens, its evictions, and the tokens the kept pass covers."""

    def __init__(self, engine: VerificationEngine) -> None:
        super().__init__(engine)
        self.waits: list[tuple[int, int, int]] = []

    def verify(self, call: VerifyCall) -> VerifyReply:
        reply = super().verify(call)
        outcome = reply.outcome
        if outcome.hidden_request is not None:
            counters = self.engine.counters()
            kept = outcome.target_hidden_start + outcome.num_forwarded  # from kv_len on
            self.waits.append((counters.num_cached_tokens, counters.num_evictions, kept))
        return reply


def _run(target: TransformersTarget, draft_model: Any, budget: int) -> tuple[Any, _Watching]:
    engine = VerificationEngine(
        target, kv_budget_tokens=budget, rules=semantic_rules(draft_coordinate_head())
    )
    verifier = _Watching(engine)
    result: GenerationResult = generate(
        verifier,
        TransformersDraft(draft_model),
        PROMPT,
        SamplingParams(max_new_tokens=MAX_NEW),
        DraftOptions("s"),
        StaticWindow(GAMMA),
        semantic=SemanticRequest(12, 20e6, upload="sh"),
    )
    return result, verifier


def test_a_kept_pass_counts_in_the_budget_and_evicted_is_still_decided_alike(
    target: TransformersTarget, draft_model: Any
) -> None:
    roomy, roomy_verifier = _run(target, draft_model, 65536)
    assert roomy_verifier.waits  # some rounds waited for their follow-up
    for cached, evictions, kept in roomy_verifier.waits:
        assert (cached, evictions) == (kept, 0)  # the waiting pass is the cached prefix
    tight, tight_verifier = _run(target, draft_model, 1)
    for cached, _, kept in tight_verifier.waits:
        assert cached == 0 and kept > 1  # evicted while it waited
    assert tight.output_token_ids == roomy.output_token_ids
    assert [r.num_accepted for r in tight.rounds] == [r.num_accepted for r in roomy.rounds]
    assert tight.semantic is not None and roomy.semantic is not None
    assert tight.semantic.exchanges == roomy.semantic.exchanges
    counters = tight_verifier.engine.counters()
    assert counters.num_reprefills >= len(tight_verifier.waits)
