"""Exact attention masks, positions and layouts, from the backend mutation pass.

Every expected array below is written out by hand from the padded layout: B rows of
P cached columns (left-padded) then N new columns (left-padded); 1 = attend.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")

import torch

from edgespec.runtime.backends.attention_mask import (
    FULL,
    SLIDING,
    AttentionLayout,
    UnsupportedAttentionError,
    attention_layout,
    batch_attention,
    batch_layout,
    new_token_positions,
)
from edgespec.runtime.backends.base import ForwardItem

# a follow-up (2 cached, 1 new) beside a 3-token cold start: P = 2, N = 3
CHAIN = [ForwardItem(None, 2, (5,), 1), ForwardItem(None, 0, (1, 2, 3), 1)]
CHAIN_ALLOWED = [
    [  # follow-up: two padding queries on their own diagonal, then the real token
        [0, 0, 1, 0, 0],
        [0, 0, 0, 1, 0],
        [1, 1, 0, 0, 1],
    ],
    [  # cold start: no cached keys, causal over its own tokens
        [0, 0, 1, 0, 0],
        [0, 0, 1, 1, 0],
        [0, 0, 1, 1, 1],
    ],
]
CHAIN_Q_POS = [[0, 0, 2], [0, 1, 2]]
CHAIN_K_POS = [[0, 1, -1, -1, 2], [-1, -1, 0, 1, 2]]
# window 2: a key at distance 2 is out (q - k < 2 keeps 0 and 1)
CHAIN_WINDOW_2 = [
    [[0, 0, 1, 0, 0], [0, 0, 0, 1, 0], [0, 1, 0, 0, 1]],
    [[0, 0, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 1, 1]],
]


def _bool(rows: list[list[list[int]]]) -> np.ndarray[Any, Any]:
    return np.asarray(rows, dtype=np.bool_)


def test_chain_layout_is_exact() -> None:
    allowed, q_pos, k_pos = batch_layout(CHAIN, 2, 3)
    assert np.array_equal(allowed, _bool(CHAIN_ALLOWED))
    assert q_pos.tolist() == CHAIN_Q_POS
    assert k_pos.tolist() == CHAIN_K_POS


def test_tree_positions_and_mask_are_exact() -> None:
    # 3 cached tokens, one context token, then nodes 0 and 1 (children of the root) and
    # node 2 (child of node 0): positions 3, then 4, 4, 5
    item = ForwardItem(None, 3, (10, 11, 12, 13), 2, tree_parents=(-1, -1, 0))
    assert new_token_positions(item).tolist() == [3, 4, 4, 5]
    allowed, q_pos, k_pos = batch_layout([item], 3, 4)
    prefix = [1, 1, 1]
    assert allowed[0].astype(int).tolist() == [
        [*prefix, 1, 0, 0, 0],
        [*prefix, 1, 1, 0, 0],
        [*prefix, 1, 0, 1, 0],  # node 1 does not see its sibling node 0
        [*prefix, 1, 1, 0, 1],  # node 2 sees node 0, its parent, not node 1
    ]
    assert q_pos.tolist() == [[3, 4, 4, 5]]
    assert k_pos.tolist() == [[0, 1, 2, 3, 4, 4, 5]]


def test_a_tree_beside_a_padded_chain() -> None:
    tree = ForwardItem(None, 1, (7, 8, 9), 3, tree_parents=(-1, -1))
    chain = ForwardItem(None, 2, (4,), 1)
    allowed, q_pos, k_pos = batch_layout([tree, chain], 2, 3)
    assert allowed.astype(int).tolist() == [
        [[0, 1, 1, 0, 0], [0, 1, 1, 1, 0], [0, 1, 1, 0, 1]],
        [[0, 0, 1, 0, 0], [0, 0, 0, 1, 0], [1, 1, 0, 0, 1]],
    ]
    assert q_pos.tolist() == [[1, 2, 2], [0, 0, 2]]
    assert k_pos.tolist() == [[-1, 0, 1, 2, 2], [0, 1, -1, -1, 2]]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_single_mask_bias_is_zero_or_the_dtype_minimum(dtype: Any) -> None:
    mask, positions = batch_attention(CHAIN, 2, 3, AttentionLayout(None, None), dtype, "cpu")
    assert isinstance(mask, torch.Tensor)
    assert mask.dtype == dtype
    assert tuple(mask.shape) == (2, 1, 3, 5)
    low = torch.finfo(dtype).min
    expected = torch.where(torch.from_numpy(_bool(CHAIN_ALLOWED)), 0.0, low).to(dtype)
    assert torch.equal(mask[:, 0], expected)
    assert bool(torch.isfinite(mask).all())
    assert positions.dtype == torch.int64
    assert positions.tolist() == CHAIN_Q_POS


def _allowed(mask: torch.Tensor) -> list[list[list[int]]]:
    rows: list[list[list[int]]] = (mask[:, 0] == 0).int().tolist()
    return rows


def test_a_model_wide_window_masks_the_single_mask() -> None:
    mask, _ = batch_attention(CHAIN, 2, 3, AttentionLayout(None, 2), torch.float32, "cpu")
    assert isinstance(mask, torch.Tensor)
    assert _allowed(mask) == CHAIN_WINDOW_2


def test_per_layer_masks_window_only_the_sliding_kind() -> None:
    layout = AttentionLayout(frozenset({FULL, SLIDING}), 2)
    masks, positions = batch_attention(CHAIN, 2, 3, layout, torch.float32, "cpu")
    assert isinstance(masks, dict)
    assert sorted(masks) == [FULL, SLIDING]
    assert _allowed(masks[FULL]) == CHAIN_ALLOWED
    assert _allowed(masks[SLIDING]) == CHAIN_WINDOW_2
    assert positions.tolist() == CHAIN_Q_POS


def test_a_window_of_one_keeps_padding_queries_on_their_own_key() -> None:
    # real queries see only themselves; padding queries (position 0) keep their padding
    # key (position -1) although it is one position behind them
    mask, _ = batch_attention(CHAIN, 2, 3, AttentionLayout(None, 1), torch.float32, "cpu")
    assert isinstance(mask, torch.Tensor)
    assert _allowed(mask) == [
        [[0, 0, 1, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1]],
        [[0, 0, 1, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1]],
    ]


class _Config(SimpleNamespace):
    def get_text_config(self) -> _Config:
        return self


def _model(**config: Any) -> SimpleNamespace:
    return SimpleNamespace(config=_Config(model_type="fake", **config))


@pytest.mark.parametrize(
    ("config", "layout"),
    [
        ({}, AttentionLayout(None, None)),
        ({"sliding_window": 4}, AttentionLayout(None, 4)),
        ({"sliding_window": 4, "_attn_implementation": "sdpa"}, AttentionLayout(None, 4)),
        # Qwen2-style: a window in the config that the model does not use
        ({"sliding_window": 4, "use_sliding_window": False}, AttentionLayout(None, None)),
        ({"sliding_window": 4, "use_sliding_window": True}, AttentionLayout(None, 4)),
        # per-layer types without a sliding layer: the window is unused
        (
            {"sliding_window": 4, "layer_types": [FULL, FULL]},
            AttentionLayout(frozenset({FULL}), None),
        ),
        (
            {"sliding_window": 4, "layer_types": [SLIDING, FULL]},
            AttentionLayout(frozenset({FULL, SLIDING}), 4),
        ),
    ],
)
def test_attention_layout_of_configs(config: dict[str, Any], layout: AttentionLayout) -> None:
    assert attention_layout(_model(**config)) == layout


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"attention_chunk_size": 8}, "attention_chunk_size=8"),
        ({"use_alibi": True}, "use_alibi=True"),
        ({"alibi": True}, "alibi=True"),
        ({"_attn_implementation": "flex_attention"}, "kernel 'flex_attention'"),
        ({"layer_types": [SLIDING]}, "no sliding_window"),
    ],
)
def test_attention_layout_refusals(config: dict[str, Any], message: str) -> None:
    with pytest.raises(UnsupportedAttentionError, match=message):
        attention_layout(_model(**config))
