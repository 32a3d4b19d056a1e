"""The target alone (runtime/wire/inprocess.py): sampling draws each token from its row's
distribution (its temperature and cuts; seeded: the same tokens), and at a temperature near 0 it
takes the greedy decode's tokens."""

from __future__ import annotations

import numpy as np

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.sampling import logits_to_probs
from edgespec.runtime.wire.inprocess import target_greedy_decode, target_sampled_decode
from tests.models.tiny import tiny_target

PROMPT = (2, 17, 4, 9, 33)


def test_sampling_draws_each_token_from_its_rows_distribution() -> None:
    target = TransformersTarget(tiny_target())
    sampling = SamplingParams(max_new_tokens=12, temperature=1.3, seed=4, top_k=9)
    tokens = target_sampled_decode(target, PROMPT, sampling)
    assert tokens == target_sampled_decode(target, PROMPT, sampling)
    # the same draws by hand: one rng.random() per token, inverted on the row's CDF
    rng, context, expected = np.random.default_rng(4), list(PROMPT), []
    for _ in range(len(tokens)):
        row = target.forward([ForwardItem(None, 0, tuple(context), 1)])[0].logits
        cdf = np.cumsum(logits_to_probs(row, 1.3, top_k=9)[0])
        expected.append(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")))
        context.append(expected[-1])
    assert tokens == tuple(expected)
    assert tokens != target_greedy_decode(target, PROMPT, 12)
    cold = target_sampled_decode(
        target, PROMPT, SamplingParams(max_new_tokens=12, temperature=1e-4, seed=0)
    )
    assert cold == target_greedy_decode(target, PROMPT, 12)
