"""VerificationEngine: lossless greedy output, prefix-cache counters, batching, trimming,
eviction."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode

PROMPTS = [(1, 2, 3, 4, 5), (9, 9, 9), (40, 2, 33, 17, 8, 60, 61), (5,), (12, 30, 12, 30, 12)]


def _open(engine: VerificationEngine, sid: str, prompt: tuple[int, ...], max_new: int = 64) -> None:
    engine.open_session(SessionSpec(sid, "c", prompt, SamplingParams(max_new_tokens=max_new)))


def _verify(engine: VerificationEngine, sid: str, draft: tuple[int, ...]) -> VerifyOutcome:
    call = VerifyCall(sid, len(engine.session_tokens(sid)), draft)
    engine.validate(call, 32)
    out = engine.verify_batch([call])[0]
    assert isinstance(out, VerifyOutcome)
    return out


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_speculative_equals_target_only(
    target: TransformersTarget, draft_model: Any, prompt: tuple[int, ...]
) -> None:
    reference = target_greedy_decode(target, prompt, 40)
    sampling = SamplingParams(max_new_tokens=40)
    for drafter in (TransformersDraft(draft_model), NgramDrafter(max_ngram=3)):
        result = speculative_generate(target, drafter, prompt, 4, sampling)
        assert result.output_token_ids == reference
        assert result.request.num_output_tokens == 40
    # the noisy draft is a real drafter: some but not all of its tokens are accepted
    result = speculative_generate(target, TransformersDraft(draft_model), prompt, 4, sampling)
    assert 0 < result.request.num_accepted < result.request.num_drafted


def test_follow_up_forwards_only_draft_plus_bonus(target: TransformersTarget) -> None:
    for prefix_len in (8, 300):
        engine = VerificationEngine(target)
        prompt = tuple(int(t) for t in np.arange(prefix_len) % 60)
        _open(engine, "s", prompt)
        first = _verify(engine, "s", (1, 2, 3))
        assert engine.counters().num_tokens_forwarded == prefix_len + 3  # cold start
        before = engine.counters().num_tokens_forwarded
        _verify(engine, "s", (4, 5, 6, 7))
        c = engine.counters()
        # the previous round's extra token + 4 draft tokens, whatever the prefix length
        assert c.num_tokens_forwarded - before == 1 + 4
        assert (c.num_cache_hits, c.num_cache_misses) == (1, 1)
        assert first.num_forwarded == prefix_len + 3


def test_rejected_tokens_are_trimmed_from_the_cache(target: TransformersTarget) -> None:
    engine = VerificationEngine(target)
    _open(engine, "s", PROMPTS[0])
    reference = target_greedy_decode(target, PROMPTS[0], 6)
    # draft: two correct tokens, then two wrong ones
    wrong = (reference[2] + 1) % 64
    out = _verify(engine, "s", (reference[0], reference[1], wrong, wrong))
    assert out.result.num_accepted == 2
    assert out.committed_token_ids == reference[:3]
    # cache holds prompt + 2 accepted drafts; the extra token is forwarded next round
    assert engine.counters().num_cached_tokens == len(PROMPTS[0]) + 2
    out = _verify(engine, "s", reference[3:6])
    assert out.committed_token_ids[:3] == reference[3:6]


def test_batched_verification_equals_unbatched(target: TransformersTarget) -> None:
    rng = np.random.default_rng(0)
    batched, single = VerificationEngine(target), VerificationEngine(target)
    prompts = [tuple(int(t) for t in rng.integers(0, 64, n)) for n in (3, 17, 40, 8, 1, 25, 60, 11)]
    for engine in (batched, single):
        for i, prompt in enumerate(prompts):
            _open(engine, f"s{i}", prompt)
    for _ in range(4):  # several rounds: cold starts, then cached prefixes of varied length
        drafts = [tuple(int(t) for t in rng.integers(0, 64, rng.integers(1, 6))) for _ in prompts]
        calls = [
            VerifyCall(f"s{i}", len(batched.session_tokens(f"s{i}")), d)
            for i, d in enumerate(drafts)
        ]
        together = batched.verify_batch(calls)
        alone = [single.verify_batch([c])[0] for c in calls]
        assert together == alone
    assert batched.counters().num_forward_passes == 4
    assert batched.counters().num_tokens_forwarded == single.counters().num_tokens_forwarded


def test_batched_logits_match_unbatched_closely(target: TransformersTarget) -> None:
    prefix = target.forward([ForwardItem(None, 0, tuple(range(20)), 1)])[0]
    items = [
        ForwardItem(prefix.kv, 20, (3, 4, 5), 3),
        ForwardItem(None, 0, (7, 8), 2),
        ForwardItem(target.crop(prefix.kv, 5), 5, (9,), 1),
    ]
    together = target.forward(items)
    for item, out in zip(items, together, strict=True):
        alone = target.forward([item])[0]
        np.testing.assert_allclose(out.logits, alone.logits, rtol=1e-4, atol=1e-3)
        assert np.array_equal(out.logits.argmax(-1), alone.logits.argmax(-1))


def test_lru_eviction_and_transparent_reprefill(target: TransformersTarget) -> None:
    engine = VerificationEngine(target, kv_budget_tokens=30)
    references = {}
    for i, prompt in enumerate(PROMPTS[:3]):
        _open(engine, f"s{i}", prompt, max_new=12)
        references[f"s{i}"] = target_greedy_decode(target, prompt, 12)
    drafter = NgramDrafter()
    rng = np.random.default_rng(0)
    while not all(engine.session_finished(s) for s in references):
        for sid in references:
            if engine.session_finished(sid):
                continue
            tokens = engine.session_tokens(sid)
            _verify(engine, sid, drafter.propose(tokens, 3, 0.0, rng).token_ids)
            assert engine.counters().num_cached_tokens <= 30
    c = engine.counters()
    assert c.num_evictions > 0 and c.num_reprefills > 0
    for sid, reference in references.items():
        prompt_len = len(PROMPTS[int(sid[1:])])
        assert engine.session_tokens(sid)[prompt_len:] == reference


def test_eos_and_token_budget_end_the_session() -> None:
    model = tiny_llama(seed=0)
    plain = TransformersTarget(model)
    reference = target_greedy_decode(plain, PROMPTS[0], 20)
    eos = reference[5]
    target = TransformersTarget(model, eos_token_ids=frozenset({eos}))
    assert target_greedy_decode(target, PROMPTS[0], 20) == reference[: reference.index(eos) + 1]
    result = speculative_generate(target, NgramDrafter(), PROMPTS[0], 4)
    assert result.output_token_ids == reference[: reference.index(eos) + 1]
    budget = speculative_generate(
        plain, NgramDrafter(), PROMPTS[0], 4, SamplingParams(max_new_tokens=3)
    )
    assert budget.output_token_ids == reference[:3]
    past = speculative_generate(  # ignore_eos: the budget alone ends it, EOS or not
        target, NgramDrafter(), PROMPTS[0], 4, SamplingParams(max_new_tokens=20, ignore_eos=True)
    )
    assert past.output_token_ids == reference


@pytest.mark.parametrize(
    ("draft", "prefix_delta", "message"),
    [
        ((1,) * 33, 0, "INVALID_ARGUMENT: draft block has 33 tokens; the limit is 32"),
        ((1, 64), 0, "INVALID_ARGUMENT: draft token 1 (id 64) is outside the vocabulary [0, 64)"),
        (
            (1,),
            1,
            "INVALID_ARGUMENT: prefix_len 6 does not match session 's', which has 5 "
            "committed tokens",
        ),
    ],
)
def test_validation_messages(
    target: TransformersTarget, draft: tuple[int, ...], prefix_delta: int, message: str
) -> None:
    engine = VerificationEngine(target)
    _open(engine, "s", PROMPTS[0])
    with pytest.raises(RequestError) as info:
        engine.validate(VerifyCall("s", len(PROMPTS[0]) + prefix_delta, draft), 32)
    assert str(info.value) == message
    with pytest.raises(RequestError, match="NOT_FOUND: unknown session 'nope'"):
        engine.validate(VerifyCall("nope", 5, (1,)), 32)


def test_reference_decoding_equals_transformers_generate(
    target: TransformersTarget, target_model: Any
) -> None:
    """The reference itself is plain greedy decoding of the model (HF ``generate``)."""
    import torch

    for prompt in PROMPTS[:3]:
        ids = torch.tensor([prompt])
        with torch.no_grad():
            out = target_model.generate(
                ids, max_new_tokens=20, do_sample=False, attention_mask=torch.ones_like(ids)
            )
        assert tuple(out[0, len(prompt) :].tolist()) == target_greedy_decode(target, prompt, 20)


@pytest.mark.parametrize(
    ("probs", "message"),
    [
        (np.full((2, 5), 0.2), "draft_probs has shape (2, 5), expected (2, 64)"),
        (
            np.full((2, 64), -1.0),
            "draft_probs row 0 gives token 0 -1.0: a probability is finite and >= 0",
        ),
        (
            np.where(np.arange(128).reshape(2, 64) == 69, np.nan, 1 / 64),
            "draft_probs row 1 gives token 5 nan: a probability is finite and >= 0",
        ),
        (np.eye(2, 64)[::-1].copy(), "draft_probs row 0 gives its own draft token 0 probability 0"),
    ],
)
def test_draft_probs_validation(
    target: TransformersTarget, probs: np.ndarray, message: str
) -> None:
    engine = VerificationEngine(target)
    sampling = SamplingParams(temperature=1.0, seed=0)
    engine.open_session(SessionSpec("s", "c", PROMPTS[0], sampling))
    call = VerifyCall("s", len(PROMPTS[0]), (0, 1), probs.astype(np.float32))
    with pytest.raises(RequestError) as info:
        engine.validate(call, 32)
    assert info.value.message == message


def test_window_is_capped_at_remaining_minus_one(
    target: TransformersTarget, target_model: Any
) -> None:
    """The verifier adds one token to every round, so a drafter never drafts past the
    budget: with a perfect draft, γ=4 and 7 new tokens the rounds draft 4 then 1."""
    from edgespec.core.types import SamplingParams
    from edgespec.runtime.wire.inprocess import speculative_generate

    result = speculative_generate(
        target,
        TransformersDraft(target_model),
        (5, 6, 7, 8),
        gamma=4,
        sampling=SamplingParams(max_new_tokens=7),
    )
    assert [r.num_drafted for r in result.rounds] == [4, 1]
    assert [r.num_committed for r in result.rounds] == [5, 2]
    assert len(result.output_token_ids) == 7
