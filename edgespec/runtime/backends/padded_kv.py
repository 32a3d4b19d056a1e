"""The batch KV cache of a padded transformers pass
(:class:`~edgespec.runtime.backends.transformers_backend.TransformersTarget`): every
item's cached prefix left-padded to the longest one (:func:`padded_cache`), and each
row's real tokens cut back out afterwards (:func:`row_kv`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import DynamicCache

from edgespec.runtime.backends.base import ForwardItem

Layers = tuple[tuple[torch.Tensor, torch.Tensor], ...]
"""Per-layer (keys, values), each [1, kv_heads, length, head_dim]."""


def row_kv(
    layers: list[tuple[torch.Tensor, torch.Tensor]],
    row: int,
    prefix_pad: int,
    new_pad: int,
    max_prefix: int,
    batch: int,
) -> Layers:
    """Row ``row``'s real tokens: its prefix and its new tokens, without padding."""
    if batch == 1 and prefix_pad == 0 and new_pad == 0:
        return tuple((k, v) for k, v in layers)  # the batch is this session's own cache
    out = []
    for k, v in layers:
        parts_k = [
            k[row : row + 1, :, prefix_pad:max_prefix],
            k[row : row + 1, :, max_prefix + new_pad :],
        ]
        parts_v = [
            v[row : row + 1, :, prefix_pad:max_prefix],
            v[row : row + 1, :, max_prefix + new_pad :],
        ]
        out.append((torch.cat(parts_k, dim=2), torch.cat(parts_v, dim=2)))
    return tuple(out)


def padded_cache(items: Sequence[ForwardItem], max_prefix: int) -> DynamicCache:
    """The batch's cache: each item's ``kv`` right-aligned at ``max_prefix`` columns
    (zeros before it); a single item's tensors as they are."""
    if max_prefix == 0:
        return DynamicCache()
    template: Layers = next(item.kv for item in items if item.kv is not None)
    if len(items) == 1:  # nothing to pad: hand the session's tensors over as they are
        return DynamicCache(ddp_cache_data=list(template))
    data = []
    for layer_idx, (k0, v0) in enumerate(template):
        keys = k0.new_zeros((len(items), k0.shape[1], max_prefix, k0.shape[3]))
        values = v0.new_zeros((len(items), v0.shape[1], max_prefix, v0.shape[3]))
        for row, item in enumerate(items):
            if item.kv is not None and item.kv_len:
                k, v = item.kv[layer_idx]
                keys[row, :, max_prefix - item.kv_len :] = k[0]
                values[row, :, max_prefix - item.kv_len :] = v[0]
        data.append((keys, values))
    return DynamicCache(ddp_cache_data=data)
