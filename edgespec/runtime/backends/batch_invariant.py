"""Batch-invariant numerics for the transformers target (``numerics="exact"``).

A token's logits must not depend on what else shares its forward pass: how many rows, how
many new tokens per row, how much padding. Library kernels choose their algorithm by
problem shape (a one-row GEMM is a GEMV; a long softmax row is reduced in more vector
lanes), so a row verified beside others can differ in its last bits from the same row
decoded alone, and a greedy argmax can flip. This module makes every reduction a token's
logits depend on run in a shape that the rest of the pass cannot change:

* **Linear layers** (every ``nn.Linear`` of the model, the LM head included) run as
  products of one shape (:func:`invariant_linear`): the token rows zero-padded to a
  multiple of :data:`ROW_MULTIPLE` and cut into chunks of exactly that many rows, each
  chunk times the weight a block of :data:`COLUMN_BLOCK` outputs at a time. Every product
  is then the same kernel on the same shape, split across the same threads, whatever the
  pass's row count; a row's result does not depend on its place in its chunk. (One
  product over the padded rows is not enough: on an AVX-512 CPU, MKL's kernel and its
  two-thread split change with the row count, even between multiples of 16.)
* **Attention** (:func:`invariant_attention`, registered with transformers as
  :data:`ATTENTION_NAME`) puts each row's keys in one canonical order, real keys first
  and padding last (``edgespec_key_order``, built by the backend from the pass's layout;
  the scores are computed in the pass's own layout, each a dot product over the head
  dimension alone, and then reordered),
  pads the key axis with masked columns to a multiple of :data:`KEY_CHUNK` and the queries
  to a multiple of :data:`ROW_MULTIPLE`, runs its score and value products on
  :data:`ROW_MULTIPLE` query rows at a time (as the linear layers do: a CPU's GEMM can pick
  its kernel by the row count), and reduces over the keys one fixed-size chunk at a time,
  the chunks' sums added in one fixed binary tree (:func:`pairwise_sum`). A token's
  scores, softmax sum and weighted values are then the same sums in the same order whatever
  padding or neighbours the pass has: masked columns and chunks add exact zeros after the
  real ones.

Nothing here is proven for every kernel library: the backend's load-time self-check
(:mod:`edgespec.runtime.backends.exactness`) compares batched with one-at-a-time logits,
bit for bit, on the device in use, and the exact mode refuses to serve when they differ.
"""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Iterator
from typing import Any

import torch
from torch.nn import functional

ATTENTION_NAME = "edgespec_batch_invariant"
"""The attention implementation name the exact mode sets on the model's config."""
ROW_MULTIPLE = 8
"""Rows per product (a target may choose another: ``row_multiple``). One decoded token pays
for 8 rows; a batch of many rows pays one product per 8 (8 cost Gemma 3 270M least on CPU,
of 4, 8 and 16: docs/PERFORMANCE.md, *Backend A/B measurements*)."""
ROW_MULTIPLE_KEY = "edgespec_row_multiple"
"""The forward keyword carrying the target's row multiple to the attention."""
KEY_CHUNK = 64
COLUMN_BLOCK = 256
"""Outputs per product in a linear layer wider than this (an LM head: 262k for Gemma 3): a
block of the weight stays in a CPU core's cache across a pass's row chunks."""
LIBRARY_ATTENTION = "_edgespec_library_attention"
"""The model attribute :func:`make_batch_invariant` keeps the library's attention name in,
for :func:`library_kernels`."""
KEY_ORDER = "edgespec_key_order"
"""The forward keyword carrying each row's canonical key order, ``[B, P + N]`` column
indices (real keys by token position, then padding)."""


def invariant_linear(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, multiple: int = ROW_MULTIPLE
) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` as products of one shape (module doc): chunks of
    ``multiple`` rows, and a weight of more than :data:`COLUMN_BLOCK` outputs a block of
    that many at a time (an LM head's block stays in cache across the row chunks)."""
    rows = x.reshape(-1, x.shape[-1])
    count = rows.shape[0]
    total = max(multiple, _round_up(count, multiple))
    padded = functional.pad(rows, (0, 0, 0, total - count)) if total != count else rows
    outputs = weight.shape[0]
    if outputs <= COLUMN_BLOCK and total == multiple:
        out = functional.linear(padded, weight, bias)
    else:
        out = padded.new_empty((total, outputs))
        for start in range(0, outputs, COLUMN_BLOCK):
            end = min(start + COLUMN_BLOCK, outputs)
            block = weight[start:end]
            block_bias = None if bias is None else bias[start:end]
            for first in range(0, total, multiple):
                chunk = padded[first : first + multiple]
                out[first : first + multiple, start:end] = functional.linear(
                    chunk, block, block_bias
                )
    return out[:count].reshape(*x.shape[:-1], outputs)


def _linear_forward(self: torch.nn.Linear, x: torch.Tensor, multiple: int) -> torch.Tensor:
    return invariant_linear(x, self.weight, self.bias, multiple)


def make_batch_invariant(model: Any, row_multiple: int = ROW_MULTIPLE) -> None:
    """Switch ``model`` (in place: the target owns it) to the batch-invariant linear layers
    (rows padded to a multiple of ``row_multiple``) and attention; registering
    :data:`ATTENTION_NAME` with transformers is idempotent."""
    if row_multiple < 1:
        raise ValueError(f"row_multiple must be >= 1, got {row_multiple}")
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(ATTENTION_NAME, invariant_attention)
    AttentionMaskInterface.register(ATTENTION_NAME, eager_mask)  # its own additive masks
    if model.config._attn_implementation != ATTENTION_NAME:
        setattr(model, LIBRARY_ATTENTION, model.config._attn_implementation)
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            forward = functools.partial(_linear_forward, multiple=row_multiple)
            module.forward = types.MethodType(forward, module)  # type: ignore[method-assign]
    _set_attention(model, ATTENTION_NAME)


@contextlib.contextmanager
def library_kernels(model: Any) -> Iterator[None]:
    """``model``, switched by :func:`make_batch_invariant`, on the library's own kernels
    inside the block (each linear layer's own ``forward``, the attention it was loaded
    with), switched back as it was on leaving, an error included: plain decoding as a user
    of the library runs it, timed beside the exact kernels (``edgespec trace --baselines``)."""
    library = getattr(model, LIBRARY_ATTENTION, None)
    if library is None:  # never switched: the library's kernels already
        yield
        return
    linears = (m for m in model.modules() if isinstance(m, torch.nn.Linear))
    switched = [m for m in linears if "forward" in vars(m)]
    forwards = [vars(m).pop("forward") for m in switched]
    _set_attention(model, library)
    try:
        yield
    finally:
        for module, forward in zip(switched, forwards, strict=True):
            module.forward = forward  # type: ignore[method-assign]
        _set_attention(model, ATTENTION_NAME)


def _set_attention(model: Any, name: str) -> None:
    model.config._attn_implementation = name
    text = model.config.get_text_config()
    if text is not model.config:
        text._attn_implementation = name


def _padded_keys(states: torch.Tensor, length: int) -> torch.Tensor:
    """``states`` [B, H_kv, L, D] zero-padded to ``length`` key columns."""
    extra = length - states.shape[2]
    return functional.pad(states, (0, 0, 0, extra)) if extra else states


def _extended(order: torch.Tensor, length: int) -> torch.Tensor:
    """``order`` [B, L] followed by the padding columns L..``length``-1."""
    tail = torch.arange(order.shape[1], length, device=order.device)
    return torch.cat([order, tail.expand(order.shape[0], -1)], dim=1)


def _round_up(count: int, multiple: int) -> int:
    return -(-count // multiple) * multiple


def pairwise_sum(parts: torch.Tensor, dim: int) -> torch.Tensor:
    """``parts`` summed over ``dim`` in a fixed binary tree: the slices zero-padded to a
    power of two, then the first half added to the second until one is left (log2 steps,
    not one per slice: each is a kernel launch on a GPU).

    Slices of exact zeros appended after the others leave every bit of the sum as it was:
    with 2^k slices or fewer nonzero, the first steps add zeros to them (exact), and the
    rest is the tree of the smallest power of two. So a row's sum over its key chunks is
    the same whatever number of masked chunks its pass padded it to."""
    count = parts.shape[dim]
    width = 1 << (count - 1).bit_length()
    if width != count:
        pad = [0, 0] * (parts.dim() - 1 - dim % parts.dim()) + [0, width - count]
        parts = functional.pad(parts, pad)
    while width > 1:
        width //= 2
        parts = parts.narrow(dim, 0, width) + parts.narrow(dim, width, width)
    return parts.select(dim, 0)


def _chunked_softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax of ``scores`` [..., C, 64] over its last two axes, each chunk's sum taken
    alike and the chunk sums added in one fixed tree (:func:`pairwise_sum`)."""
    weights = torch.exp(scores - scores.amax(dim=(-2, -1), keepdim=True))
    total = pairwise_sum(weights.sum(dim=-1), dim=-1)  # [..., C] → [...]
    return weights / total[..., None, None]


def _canonical_values(value: torch.Tensor, index: torch.Tensor | None, padded: int) -> torch.Tensor:
    """``value`` [B, H_kv, L, D] padded to ``padded`` keys, in ``index``'s order when given
    (rows of one flat matrix: index_select copies them 10x faster than gather)."""
    values = _padded_keys(value, padded)
    if index is None:
        return values
    batch, kv_heads, _, head_dim = values.shape
    rows_at = index[:, None, :] + padded * torch.arange(
        batch * kv_heads, device=index.device
    ).reshape(batch, kv_heads, 1)
    flat = values.reshape(-1, head_dim).index_select(0, rows_at.reshape(-1))
    return flat.reshape(batch, kv_heads, padded, head_dim)


def invariant_attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    softcap: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Scaled dot-product attention with a batch-invariant reduction order (module doc).

    ``query`` [B, H, M, D], ``key``/``value`` [B, H_kv, L, D]; ``attention_mask`` the
    additive [B, 1, M, L] bias with its key axis already in the canonical order
    (``edgespec_key_order`` [B, L], absent when the layout is canonical as it is: one row,
    nothing padded). Returns [B, M, H, D] as transformers' eager attention does. Grouped
    query heads share their key head's matrix product (no repeated keys)."""
    if attention_mask is None:
        raise ValueError(f"{ATTENTION_NAME} attention needs an explicit attention mask")
    batch, heads, num_queries, head_dim = query.shape
    kv_heads, length = key.shape[1], key.shape[2]
    groups = heads // kv_heads
    multiple = int(kwargs.get(ROW_MULTIPLE_KEY, ROW_MULTIPLE))
    rows = _round_up(num_queries, multiple)
    chunks = _round_up(length, KEY_CHUNK) // KEY_CHUNK
    order = kwargs.get(KEY_ORDER)
    padded = chunks * KEY_CHUNK
    index = None if order is None else _extended(order, padded)
    q = functional.pad(query, (0, 0, 0, rows - num_queries)) if rows != num_queries else query
    q = q.reshape(batch, kv_heads, groups, rows, head_dim)
    scale = head_dim**-0.5 if scaling is None else scaling
    # every intermediate below is contiguous, in one layout whatever the pass's shape
    scores = _row_chunked(q, _padded_keys(key, padded).transpose(-1, -2)[:, :, None], multiple)
    if index is not None:
        scores = scores.gather(4, index[:, None, None, None, :].expand(scores.shape))
    scores = scores * scale
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    bias = functional.pad(
        attention_mask,
        (0, padded - length, 0, rows - num_queries),
        value=torch.finfo(attention_mask.dtype).min,
    )
    scores = scores.reshape(batch, heads, rows, padded).float() + bias.float()
    scores = scores.reshape(batch, kv_heads, groups, rows, chunks, KEY_CHUNK)
    weights = _chunked_softmax(scores).to(value.dtype).permute(0, 1, 4, 2, 3, 5)
    values = _canonical_values(value, index, padded)
    values = values.reshape(batch, kv_heads, chunks, 1, KEY_CHUNK, head_dim)
    out = pairwise_sum(_row_chunked(weights, values, multiple), dim=2)  # [B, H_kv, C, G, M, D] → C
    out = out.reshape(batch, heads, rows, head_dim)[:, :, :num_queries]
    return out.transpose(1, 2).contiguous(), None


def _row_chunked(left: torch.Tensor, right: torch.Tensor, multiple: int) -> torch.Tensor:
    """``left`` [..., G, M, K] times ``right`` [..., 1, K, N] as products of one shape: the
    M rows (a multiple of ``multiple``) cut into chunks of ``multiple``, each chunk's G
    groups one [G·multiple, K] matrix, so no product's row count depends on the pass's
    longest block (a CPU's GEMM may pick its kernel by it: head_dim 256 on AVX-512)."""
    *lead, groups, rows, inner = left.shape
    if rows == multiple:  # one chunk (a decode pass's): its product, no copy into ``out``
        product = torch.matmul(left.reshape(*lead, groups * rows, inner), right.squeeze(-3))
        return product.reshape(*lead, groups, rows, -1)
    out = left.new_empty((*lead, groups, rows, right.shape[-1]))
    for first in range(0, rows, multiple):
        chunk = left[..., first : first + multiple, :].reshape(*lead, groups * multiple, inner)
        product = torch.matmul(chunk, right.squeeze(-3))
        out[..., first : first + multiple, :] = product.reshape(*lead, groups, multiple, -1)
    return out
