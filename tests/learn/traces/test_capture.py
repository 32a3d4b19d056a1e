"""Trace capture on tiny models through the runtime's own speculative loop."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from edgespec.learn.traces.acceptance import per_position_acceptance
from edgespec.learn.traces.capture import capture
from edgespec.learn.traces.replay import replay_accepted_lengths
from edgespec.learn.traces.settings import CaptureSettings, PairInfo
from edgespec.runtime.backends.hybrid_draft import HybridDraft
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.models.tiny import VOCAB, tiny_draft, tiny_target

PROMPTS = [("p0", "toy", (2, 17, 4, 9, 33, 4, 9)), ("p1", "toy", (2, 5, 6, 7, 5, 6))]


def test_trimmed_draft_backend_proposes_the_full_vocab_argmax() -> None:
    draft = tiny_draft(list(range(1, VOCAB, 3)))
    backend = TransformersDraft(draft)
    context = [2, 17, 4, 9]
    proposal = backend.propose(context, 3, 0.0, np.random.default_rng(0))
    seq = list(context)
    expected = []
    with torch.no_grad():
        for _ in range(3):
            token = int(draft(input_ids=torch.tensor([seq])).logits[0, -1].argmax())
            expected.append(token)
            seq.append(token)
    assert proposal.token_ids == tuple(expected)
    assert backend.last_logits is not None and backend.last_logits.shape == (
        3,
        len(range(1, VOCAB, 3)),
    )
    # a context that shares only a prefix with the cached one is handled by cropping
    again = backend.propose([2, 17, 5], 2, 0.0, np.random.default_rng(0))
    fresh = TransformersDraft(draft).propose([2, 17, 5], 2, 0.0, np.random.default_rng(0))
    assert again.token_ids == fresh.token_ids


def test_capture_is_lossless_and_its_acceptance_sequence_replays_the_measured_rounds() -> None:
    target_model = tiny_target()
    target = TransformersTarget(target_model)
    settings = CaptureSettings(gamma_max=4, max_new_tokens=24, target_only=True, num_drafters=3)
    for drafter in (NgramDrafter(max_ngram=3), TransformersDraft(tiny_draft(list(range(VOCAB))))):
        pair = PairInfo("tiny-target", "tiny-draft")
        records = capture(target, drafter, pair, PROMPTS, settings)
        assert [r.request_id for r in records] == ["p0", "p1"]
        assert [r.drafter_id for r in records] == [0, 1]
        assert records[0].arrival_ms == 0.0 and records[1].arrival_ms > 0.0
        for record, (_, _, prompt) in zip(records, PROMPTS, strict=True):
            reference = target_greedy_decode(target, prompt, 24)
            assert record.lossless is True
            assert record.output_tokens == len(reference)
            assert len(record.acceptance_seq) == record.output_tokens
            measured = [r.num_accepted for r in record.rounds]
            assert replay_accepted_lengths(record.acceptance_seq, 4, 24) == measured
            assert all(r.gamma <= 4 for r in record.rounds)


def test_capture_says_each_stage_of_each_prompt_as_it_begins() -> None:
    target_model = tiny_target()
    target = TransformersTarget(target_model)
    settings = CaptureSettings(gamma_max=4, max_new_tokens=6, target_only=True)
    heard: list[tuple[str, str]] = []
    capture(target, NgramDrafter(), PairInfo("t", "ngram", target_model), PROMPTS, settings,
            on_stage=lambda request_id, stage: heard.append((request_id, stage)))  # fmt: skip
    stages = ["speculative decoding", "acceptance per position",
              "the target alone on the exact kernels (lossless check)",
              "the target alone (baseline)"]  # fmt: skip
    assert heard == [(p, stage) for p in ("p0", "p1") for stage in stages]


def test_per_position_acceptance_matches_the_draft_argmax_on_the_target_prefix() -> None:
    drafter = NgramDrafter(max_ngram=2)
    prompt, output = (2, 5, 6, 7, 5, 6), (7, 5, 9, 7)
    flags, feats = per_position_acceptance(drafter, prompt, output)
    # n-gram: after ...5,6 comes 7 (hit); after 6,7 comes 5 (hit); after 7,5 comes 6 (miss, 9);
    # after 5,9 no bigram, unigram 9 never seen before → repeats 9 (miss, 7)
    assert flags == (1, 1, 0, 0)
    assert feats is None


def test_hybrid_draft_uses_lookup_when_the_suffix_repeats_and_the_model_otherwise() -> None:
    draft = tiny_draft(list(range(VOCAB)))
    rng = np.random.default_rng(0)
    neural = TransformersDraft(draft).propose([2, 30, 31], 1, 0.0, rng).token_ids[0]
    hybrid = HybridDraft(draft, max_ngram=3, min_ngram=2)
    assert hybrid.propose([2, 30, 31], 1, 0.0, rng).token_ids == (neural,)
    # (30, 31) occurred before, followed by 40 → lookup proposes 40, then (31, 40) → 41
    proposal = hybrid.propose([2, 30, 31, 40, 41, 7, 30, 31], 2, 0.0, rng)
    assert proposal.token_ids == (40, 41)
    assert hybrid.last_logits is not None and hybrid.last_logits.shape == (2, VOCAB)


def test_feature_draft_capture_is_lossless_and_replays_its_rounds_at_gamma_max() -> None:
    from edgespec.learn.traces.acceptance import flags_from_rounds
    from edgespec.runtime.backends.feature_draft import FeatureDraft
    from tests.models.test_feature_draft import _net

    class Counting(FeatureDraft):
        fallbacks = 0

        def _fallback(self, context: Any, gamma: int, temperature: float) -> Any:
            self.fallbacks += 1
            return super()._fallback(context, gamma, temperature)

    target = TransformersTarget(tiny_target())
    settings = CaptureSettings(gamma_max=4, max_new_tokens=24, target_only=True)
    drafter = Counting(_net())
    records = capture(target, drafter, PairInfo("tiny-target", "tiny-feature"), PROMPTS, settings)
    assert drafter.fallbacks == len(PROMPTS)  # only each request's first round: no features yet
    for record in records:
        assert record.lossless is True
        measured = [r.num_accepted for r in record.rounds]
        assert replay_accepted_lengths(record.acceptance_seq, 4, 24) == measured
        assert record.draft_features is not None  # step-1 logits on the target's features
    assert flags_from_rounds([2, 0, 1], 6) == (1, 1, 0, 0, 1, 0)
    assert flags_from_rounds([4], 3) == (1, 1, 1)
