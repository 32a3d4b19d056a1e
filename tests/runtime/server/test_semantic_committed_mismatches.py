"""A semantic round's ``accepted_mismatches`` counts the mismatching draft tokens it
COMMITS: those an EOS or the token budget cut away are not committed, so not counted (the
rule's verdict counted every accepted mismatch of the block: 2 past an EOS, 4 of a block
the budget cut to 2). Every consumer (the edge's round records, its ``SemanticSummary``, the
LOSSY line, the real-pair reproduction's per-answer counts) reads this count."""

from __future__ import annotations

from typing import Any

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.messages import (
    DRAFT_HIDDEN,
    SemanticSpec,
    SessionSpec,
    VerifyCall,
    VerifyOutcome,
)
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.testing import tiny_llama
from tests.runtime.semantic_helpers import constant_head, next_token, rows

PROMPT = (3, 1, 4, 1, 5)
VOCAB = 64  # tiny_llama's


def _target_with_eos() -> tuple[TransformersTarget, Any, int, int]:
    """A tiny target whose 2nd greedy token after PROMPT is its EOS: (target, its model,
    g1, eos)."""
    probe = tiny_llama(seed=0)
    g1 = next_token(probe, PROMPT)
    eos = next_token(probe, (*PROMPT, g1))
    model = tiny_llama(seed=0, eos_token_id=eos)
    return TransformersTarget(model), model, g1, eos


def _round(
    target: TransformersTarget, budget: int, block: tuple[int, ...]
) -> tuple[VerifyOutcome, VerifyOutcome]:
    """One semantic round of ``block`` under a head that accepts every mismatch, and the
    same call again (a retry gets the stored round)."""
    engine = VerificationEngine(target, rules=semantic_rules(constant_head(-20.0)))
    sampling = SamplingParams(max_new_tokens=budget)
    spec = SemanticSpec(threshold=12, uplink_bps=20e6)
    engine.open_session(SessionSpec("s", "c", PROMPT, sampling, verification_rule="semantic",
                                    semantic=spec))  # fmt: skip
    call = VerifyCall("s", len(PROMPT), block, payloads={DRAFT_HIDDEN: rows(*[-1.0] * len(block))})
    engine.validate(call, 16)
    (out,) = engine.verify_batch([call])
    again = engine.replay(call)
    assert isinstance(out, VerifyOutcome) and isinstance(again, VerifyOutcome)
    return out, again


def _mismatching(model: Any, avoid: int, n: int) -> tuple[int, ...]:
    """``n`` draft tokens, each differing from ``model``'s argmax after the ones before
    (and from ``avoid``)."""
    seq, block = list(PROMPT), []
    for _ in range(n):
        token = (next_token(model, seq) + 1) % VOCAB
        token = (token + 1) % VOCAB if token == avoid else token
        block.append(token)
        seq.append(token)
    return tuple(block)


def test_mismatches_past_an_eos_are_not_counted() -> None:
    """Block (g1, EOS, m, m): the head accepts the 2 mismatches after the EOS, but the EOS
    ends the output there; (g1, EOS) are committed, neither a mismatch: 0 (was 2)."""
    target, model, g1, eos = _target_with_eos()
    after = next_token(model, (*PROMPT, g1, eos))
    block = (g1, eos, (after + 1) % VOCAB, 7 if after != 7 else 8)
    out, again = _round(target, 16, block)
    assert out.committed_token_ids == (g1, eos) and out.finished
    assert out.result.num_accepted == 4  # the verdict accepted the whole block
    assert out.accepted_mismatches == 0 and again.accepted_mismatches == 0


def test_mismatches_past_the_token_budget_are_not_counted() -> None:
    """Four mismatches, all accepted, under a budget of 2 tokens: 2 are committed, 2
    counted (was 4)."""
    target, model, _, eos = _target_with_eos()
    block = _mismatching(model, eos, 4)
    out, again = _round(target, 2, block)
    assert out.committed_token_ids == block[:2] and out.finished
    assert out.accepted_mismatches == 2 and again.accepted_mismatches == 2


def test_every_committed_mismatch_is_counted() -> None:
    """The same block under a budget that commits it all: 4 mismatches and the bonus."""
    target, model, _, eos = _target_with_eos()
    block = _mismatching(model, eos, 4)
    out, _ = _round(target, 16, block)
    assert out.committed_token_ids[:4] == block and len(out.committed_token_ids) == 5
    assert out.accepted_mismatches == 4
