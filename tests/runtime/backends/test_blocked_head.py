"""The target backend's blocked LM head gives the model's own logits."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.lm_head import blocked_head, plain_head
from edgespec.runtime.backends.transformers_backend import TransformersTarget


def test_blocked_head_equals_the_full_matmul_across_block_edges() -> None:
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(2, 3, 8, generator=gen)
    weight = torch.randn(5000, 8, generator=gen)  # 2 full blocks of 2,048 and a partial one
    torch.testing.assert_close(blocked_head(hidden, weight), hidden @ weight.T)


def test_plain_head_only_for_bias_free_uncapped_heads(target_model: Any) -> None:
    assert plain_head(target_model) is target_model.lm_head.weight
    target_model.config.final_logit_softcapping = 30.0
    try:
        assert plain_head(target_model) is None
    finally:
        target_model.config.final_logit_softcapping = None


def test_verification_logits_match_the_models_own_head(target_model: Any) -> None:
    blocked = TransformersTarget(target_model, blocked_head_logits=True, numerics="lossy")
    reference = TransformersTarget(target_model, numerics="lossy")
    prompt = tuple(range(5, 25))
    kv = reference.forward([ForwardItem(None, 0, prompt, 1)])[0].kv
    items = [ForwardItem(kv, len(prompt), (30, 31, 32, 33, 34), 5)]
    a = blocked.forward(items)[0].logits
    b = reference.forward(items)[0].logits
    assert a.shape == b.shape == (5, target_model.config.vocab_size)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert (a.argmax(-1) == b.argmax(-1)).all()
