"""The helpers every drafter shares: prompt lookup, the longest-common-prefix cache sync."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")

import torch

from edgespec.runtime.backends.base import common_prefix_length
from edgespec.runtime.backends.ngram import NgramDrafter, suffix_match_next
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.testing import tiny_gemma3, tiny_llama

RNG = np.random.default_rng(0)
S, F = "sliding_attention", "full_attention"


def test_suffix_match_next_on_a_hand_built_context() -> None:
    context = [5, 6, 7, 9, 5, 6, 7, 1, 5, 6]
    # (5, 6) last occurred at 4..5, followed by 7; the longer (x, 5, 6) suffixes never repeat
    assert suffix_match_next(context, 4, 2) == 7
    assert suffix_match_next([5, 6, 7, 9, 5, 6], 3, 2) == 7
    assert suffix_match_next([5, 6, 7, 6, 5, 6], 3, 2) == 7  # (5, 6) wins over the later (6,)
    assert suffix_match_next([5, 6, 7, 6, 5, 6], 3, 1) == 7
    assert suffix_match_next([4, 8, 3, 4], 3, 2) is None
    assert suffix_match_next([4, 8, 3, 4], 3, 1) == 8
    assert suffix_match_next([1, 2, 3, 4], 3, 1) is None
    assert suffix_match_next([4], 3, 1) is None  # nothing before the suffix
    assert suffix_match_next([9, 9], 1, 1) == 9


def test_ngram_drafter_is_the_lookup_down_to_unigrams_then_repeat() -> None:
    drafter = NgramDrafter(max_ngram=3, vocab_size=12)
    proposal = drafter.propose([1, 2, 3, 4, 1, 2], 4, 0.0, RNG)
    assert proposal.token_ids == (3, 4, 1, 2)  # the lookup continues on its own proposal
    assert proposal.probs is not None and proposal.probs.shape == (4, 12)
    assert (proposal.probs.argmax(1) == proposal.token_ids).all()
    assert NgramDrafter(max_ngram=2).propose([7, 8], 3, 0.0, RNG).token_ids == (8, 8, 8)


def test_common_prefix_length() -> None:
    assert common_prefix_length([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix_length([1, 2], [1, 2, 3]) == 2
    assert common_prefix_length([1, 2, 3], [1, 2]) == 2
    assert common_prefix_length([], [1]) == 0
    assert common_prefix_length([9, 2], [1, 2]) == 0


class _Counting(torch.nn.Module):
    """A causal LM that records the tokens of every forward pass."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner
        self.config = inner.config
        self.seen: list[list[int]] = []

    def forward(self, input_ids: Any, **kwargs: Any) -> Any:
        self.seen.append(input_ids[0].tolist())
        return self.inner(input_ids=input_ids, **kwargs)


def _greedy(model: Any, context: list[int], gamma: int) -> tuple[int, ...]:
    """The model's own greedy continuation, no cache."""
    seq = list(context)
    with torch.no_grad():
        for _ in range(gamma):
            seq.append(int(model(input_ids=torch.tensor([seq])).logits[0, -1].argmax()))
    return tuple(seq[len(context) :])


def test_cache_sync_crops_exactly_to_the_common_prefix_and_reuses_it() -> None:
    model = _Counting(tiny_llama(seed=2))
    drafter = TransformersDraft(model)
    context = [3, 9, 4, 7, 11, 2]
    first = drafter.propose(context, 3, 0.0, RNG).token_ids
    assert model.seen == [context, [first[0]], [first[1]]]
    assert drafter._cache.get_seq_length() == len(context) + 2
    keys = drafter._cache.layers[0].keys[:, :, :4].clone()
    model.seen.clear()
    # shares 4 tokens with what is cached: only the rest is forwarded
    diverged = [*context[:4], 5, 6, 8]
    second = drafter.propose(diverged, 2, 0.0, RNG).token_ids
    assert model.seen == [diverged[4:], [second[0]]]
    assert torch.equal(drafter._cache.layers[0].keys[:, :, :4], keys)  # reused, not recomputed
    assert second == _greedy(model.inner, diverged, 2)
    model.seen.clear()
    # a context that is a prefix of the cache: the last token is forwarded again
    again = drafter.propose(diverged[:5], 1, 0.0, RNG).token_ids
    assert model.seen == [diverged[4:5]]
    assert again == _greedy(model.inner, diverged[:5], 1)
    model.seen.clear()
    # nothing in common: a cold start
    drafter.propose([1, 2], 1, 0.0, RNG)
    assert model.seen == [[1, 2]]


def test_the_cached_draft_equals_the_uncached_model_across_a_sliding_window() -> None:
    """Crops and growth on a Gemma 3 with a 4-token window: every proposal is the model's
    own greedy continuation, computed without a cache."""
    model = tiny_gemma3(seed=1, num_layers=3, sliding_window=4, layer_types=[S, F, S])
    drafter = TransformersDraft(model)
    context = [int(t) for t in np.random.default_rng(3).integers(0, 64, 9)]
    for step in range(6):
        proposal = drafter.propose(context, 3, 0.0, RNG).token_ids
        assert proposal == _greedy(model, context, 3)
        kept = len(context) - 3 if step == 2 else len(context)  # one round rejects a suffix
        context = [*context[:kept], *proposal[: 1 + step % 3], (7 * step) % 64]


def test_sampled_drafts_use_the_shared_sampler_on_q() -> None:
    from edgespec.core.speculative import sample_token
    from edgespec.runtime.sampling import logits_to_probs

    model = tiny_llama(seed=4, vocab_size=6, logit_scale=1.5)
    proposal = TransformersDraft(model).propose([1, 2, 3], 1, 0.8, np.random.default_rng(5))
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([[1, 2, 3]])).logits[0, -1:].numpy()
    q = logits_to_probs(logits, 0.8)[0]
    assert proposal.probs is not None
    np.testing.assert_allclose(proposal.probs[0], q, atol=1e-6)
    assert proposal.token_ids == (sample_token(q, np.random.default_rng(5)),)
