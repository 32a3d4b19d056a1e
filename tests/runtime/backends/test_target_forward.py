"""The transformers target's passes on a tiny Llama: per-row caches, chunked prefill
pieces, which head runs, and the NaN guard, from the backend mutation pass."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch

from edgespec.runtime.backends import lm_head, transformers_backend
from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.backends.lm_head import BLOCKED_HEAD_MAX_ROWS
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.testing import tiny_gemma3, tiny_llama


class _Recording(TransformersTarget):
    """Records each pass's items as (cached, new tokens, tree size), and the positions of
    the exactness probe's passes without a head."""

    def __init__(self, model: Any, **kwargs: Any) -> None:
        self.passes: list[list[tuple[int, int, int]]] = []
        self.head_free: list[int] = []
        super().__init__(model, **kwargs)
        self.probe = list(self.passes)  # the load probe's passes
        self.passes.clear()

    def _forward_pass(self, items: Sequence[ForwardItem]) -> list[ForwardOutput]:
        self.passes.append(
            [(i.kv_len, len(i.new_token_ids), len(i.tree_parents or ())) for i in items]
        )
        return super()._forward_pass(items)

    def _extend(self, kv: Any, kv_len: int, token: int) -> Any:
        self.passes.append([(kv_len, 1, 0)])
        self.head_free.append(kv_len)
        return super()._extend(kv, kv_len, token)


@pytest.fixture(scope="module")
def model() -> Any:
    return tiny_llama(0)


@pytest.mark.parametrize(
    ("window", "length"), [(None, 12), (4, 8), (10, 14)], ids=["llama", "w4", "w10"]
)
def test_the_load_probe_pads_past_the_window(window: int | None, length: int) -> None:
    # S is one window plus four tokens (at least 8; 12 without a window): S[:-2] cold,
    # then S[-2:] beside a 5-token cold start, left-padded by 3 columns
    if window is None:
        target = _Recording(tiny_llama(0))
    else:
        types = ["sliding_attention", "full_attention"]
        target = _Recording(tiny_gemma3(num_layers=2, sliding_window=window, layer_types=types))
    assert target.probe[:2] == [[(0, length - 2, 0)], [(length - 2, 2, 0), (0, 5, 0)]]
    # then the exactness self-check: S (one window plus six tokens, at least 13: its cold
    # block S[:-4] spans two 8-row chunks) one token at a time, and its last four tokens on
    # S[:-4] beside a 5-token cold start
    s = 13 if window is None else max(13, window + 6)
    assert [[(i, 1, 0)] for i in range(s)] == target.probe[2 : 2 + s]
    assert [(s - 4, 4, 0), (0, 5, 0)] in target.probe
    # the head runs only where a comparison reads S's logits: positions 5, 6 and the last 6
    assert target.head_free == [i for i in range(s) if i not in (5, 6) and i < s - 6]


def test_every_rows_cache_is_its_own_even_without_padding(model: Any) -> None:
    target = TransformersTarget(model)
    cold = target.forward([ForwardItem(None, 0, (1, 2, 3, 4), 1)])[0]
    short = target.forward([ForwardItem(None, 0, (9, 8), 1)])[0]
    # row 1 is the longest in both prefix and new tokens: no padding at all
    items = [ForwardItem(short.kv, 2, (5,), 1), ForwardItem(cold.kv, 4, (6, 7, 8), 2)]
    together = target.forward(items)
    for item, out in zip(items, together, strict=True):
        alone = target.forward([item])[0]
        length = item.kv_len + len(item.new_token_ids)
        for (k, v), (k_alone, v_alone) in zip(out.kv, alone.kv, strict=True):
            assert k.shape[0] == 1 and v.shape[0] == 1
            assert k.shape[2] == v.shape[2] == length
            torch.testing.assert_close(k, k_alone, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(v, v_alone, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(out.logits, alone.logits, rtol=1e-4, atol=1e-3)


def test_chunked_prefill_pieces_are_exact(model: Any) -> None:
    target = _Recording(model, prefill_chunk_tokens=4)
    out = target.forward([ForwardItem(None, 0, tuple(range(1, 10)), 1)])[0]  # 9 tokens
    assert target.passes == [[(0, 4, 0)], [(4, 4, 0)], [(8, 1, 0)]]
    assert out.logits.shape == (1, 64)
    target.passes.clear()
    target.forward([ForwardItem(None, 0, tuple(range(1, 5)), 1)])  # exactly one chunk
    assert target.passes == [[(0, 4, 0)]]


def test_chunked_prefill_keeps_a_trees_root_token_with_the_tree(model: Any) -> None:
    target = _Recording(model, prefill_chunk_tokens=4)
    # 7 context tokens, then a 2-node chain tree; logits asked only for the last node
    item = ForwardItem(None, 0, (1, 2, 3, 4, 5, 6, 7, 8, 9), 1, tree_parents=(-1, 0))
    out = target.forward([item])[0]
    assert target.passes == [[(0, 4, 0)], [(4, 2, 0)], [(6, 3, 2)]]
    whole = TransformersTarget(model).forward([item])[0]
    np.testing.assert_allclose(out.logits, whole.logits, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("numerics", ["lossy", "exact"])
def test_blocked_head_runs_for_two_to_max_rows_only(
    model: Any, numerics: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked for, the lossy mode's head runs in vocabulary blocks for
    2..BLOCKED_HEAD_MAX_ROWS rows; the exact mode's never does: its head is blocked as every
    wide linear layer is (``invariant_linear``), the same products whatever the rows. Not
    asked for (the default), no mode's does."""
    target = TransformersTarget(model, numerics=numerics, blocked_head_logits=True)  # type: ignore[arg-type]
    calls: list[int] = []
    real = lm_head.blocked_head

    def counting(hidden: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        calls.append(hidden.reshape(-1, hidden.shape[-1]).shape[0])
        return real(hidden, weight)

    monkeypatch.setattr(transformers_backend, "blocked_head", counting)

    def head_rows(items: list[ForwardItem]) -> list[int]:
        calls.clear()
        target.forward(items)
        return list(calls)

    def blocked(n: int) -> list[int]:
        return [] if numerics == "exact" else [n]

    one = ForwardItem(None, 0, (1, 2, 3), 1)
    assert head_rows([one]) == []  # one row: the model's own head
    assert head_rows([ForwardItem(None, 0, (1, 2, 3), 2)]) == blocked(2)
    assert head_rows([one, one]) == blocked(2)
    rows = BLOCKED_HEAD_MAX_ROWS
    tokens = tuple(t % 60 + 1 for t in range(rows + 1))
    assert head_rows([ForwardItem(None, 0, tokens, rows)]) == blocked(rows)
    assert head_rows([ForwardItem(None, 0, tokens, rows + 1)]) == []
    target = TransformersTarget(model, numerics=numerics)  # type: ignore[arg-type]
    assert head_rows([one, one]) == []


@pytest.mark.parametrize("blocked", [True, False])
def test_nan_logits_are_refused(blocked: bool) -> None:
    model = tiny_llama(0)
    target = TransformersTarget(model, blocked_head_logits=blocked, numerics="lossy")
    with torch.no_grad():
        model.lm_head.weight[3, 0] = float("nan")
    with pytest.raises(RuntimeError, match="NaN logits in a batched forward pass"):
        target.forward([ForwardItem(None, 0, (1, 2), 1), ForwardItem(None, 0, (3,), 1)])
