"""Splitting a verification batch into padded passes of similar shape."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.padding import padding_ok, pass_groups
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.testing import tiny_llama


def test_cold_start_beside_a_follow_up_gets_its_own_pass() -> None:
    # the measured case of docs/PROFILE.md: one pass took 2.0x the two passes
    assert pass_groups([(5, 1000), (971, 0)]) == [[0], [1]]
    assert pass_groups([(971, 0), (5, 1000), (4, 10)]) == [[2, 1], [0]]  # sorted by shape


def test_verification_blocks_of_similar_length_stay_one_pass() -> None:
    follow_ups = [(5, 500), (5, 1000), (1, 800), (5, 1500), (3, 2000)] * 3
    assert pass_groups(follow_ups) == [sorted(range(15), key=lambda i: follow_ups[i])]
    assert padding_ok([(600, 0), (590, 0), (580, 0)])
    assert not padding_ok([(600, 0), (400, 0), (200, 0)])  # 1,800 rows for 1,200 tokens
    assert pass_groups([(600, 0), (400, 0), (200, 0)]) == [[2], [1, 0]]


class _CountingTarget(TransformersTarget):
    def __init__(self, model: Any, split: bool) -> None:
        self.passes: list[list[int]] = []
        super().__init__(model, split_padded_batches=split)

    def _forward_pass(self, items: Any) -> Any:
        self.passes.append([len(i.new_token_ids) for i in items])
        return super()._forward_pass(items)


@pytest.mark.parametrize("split", [True, False])
def test_split_batch_returns_each_items_own_result_in_order(split: bool) -> None:
    target = _CountingTarget(tiny_llama(0), split)
    prefix = target.forward([ForwardItem(None, 0, tuple(range(40)), 1)])[0]
    items = [
        ForwardItem(prefix.kv, 40, (3, 4), 2),
        ForwardItem(None, 0, tuple(t % 50 for t in range(5, 65)), 1),  # a 60-token cold start
        ForwardItem(target.crop(prefix.kv, 30), 30, (9,), 1),
    ]
    target.passes.clear()
    together = target.forward(items)
    assert target.passes == ([[1, 2], [60]] if split else [[2, 60, 1]])
    for item, out in zip(items, together, strict=True):
        alone = target.forward([item])[0]
        np.testing.assert_allclose(out.logits, alone.logits, rtol=1e-4, atol=1e-3)
        assert np.array_equal(out.logits.argmax(-1), alone.logits.argmax(-1))
        assert [k.shape[2] for k, _ in out.kv] == [k.shape[2] for k, _ in alone.kv]
