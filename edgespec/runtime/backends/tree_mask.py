"""Explicit attention masks for batches that hold token trees.

A plain batch needs only a 2-D padding mask (transformers adds causality). A token tree
(:mod:`edgespec.core.tree`) needs a 4-D one: tree nodes share positions (siblings sit at
the same depth) and attend to their ancestors only. :func:`batch_attention` builds, for
the padded layout of :class:`~edgespec.runtime.backends.transformers_backend.TransformersTarget`
(prefix left-padded to P columns, new tokens left-padded to N), the additive bias
``[B, 1, N, P + N]`` (0 = attend, dtype minimum = masked) and the position ids, with the
sliding window applied by true token positions where the model has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from edgespec.core.tree import ancestor_matrix, node_depths
from edgespec.runtime.backends.base import ForwardItem

Mask = torch.Tensor | dict[str, torch.Tensor]


def new_token_positions(item: ForwardItem) -> npt.NDArray[np.int64]:
    """Sequence position of each new token: context tokens in order, tree nodes by depth."""
    c = item.num_context
    positions = item.kv_len + np.arange(len(item.new_token_ids), dtype=np.int64)
    if item.tree_parents is not None:
        depths = np.asarray(node_depths(item.tree_parents), dtype=np.int64)
        positions[c:] = item.kv_len + c - 1 + depths
    return positions


def _new_block(item: ForwardItem) -> npt.NDArray[np.bool_]:
    """n × n: which new tokens each new token may attend to."""
    n, c = len(item.new_token_ids), item.num_context
    allowed = np.tril(np.ones((n, n), dtype=np.bool_))
    if item.tree_parents is not None:
        allowed[c:, c:] = ancestor_matrix(item.tree_parents)
    return allowed


def batch_layout(
    items: Sequence[ForwardItem], max_prefix: int, max_new: int
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(allowed ``[B, N, P + N]``, query positions ``[B, N]``, key positions ``[B, P + N]``)
    for the padded layout; padding keys get position -1, padding queries attend to
    themselves only (so no row of the softmax is empty)."""
    batch = len(items)
    allowed = np.zeros((batch, max_new, max_prefix + max_new), dtype=np.bool_)
    q_pos = np.zeros((batch, max_new), dtype=np.int64)
    k_pos = np.full((batch, max_prefix + max_new), -1, dtype=np.int64)
    for row, item in enumerate(items):
        n = len(item.new_token_ids)
        pad = max_new - n
        first = max_prefix - item.kv_len
        positions = new_token_positions(item)
        allowed[row, pad:, first:max_prefix] = True
        allowed[row, pad:, max_prefix + pad :] = _new_block(item)
        for j in range(pad):
            allowed[row, j, max_prefix + j] = True
        q_pos[row, pad:] = positions
        k_pos[row, first:max_prefix] = np.arange(item.kv_len)
        k_pos[row, max_prefix + pad :] = positions
    return allowed, q_pos, k_pos


def _bias(allowed: npt.NDArray[np.bool_], dtype: torch.dtype, device: Any) -> torch.Tensor:
    bias = torch.zeros(allowed.shape, dtype=dtype)
    bias.masked_fill_(torch.from_numpy(~allowed), torch.finfo(dtype).min)
    return bias[:, None].to(device)


def batch_attention(
    items: Sequence[ForwardItem],
    max_prefix: int,
    max_new: int,
    text_config: Any,
    dtype: torch.dtype,
    device: Any,
) -> tuple[Mask, torch.Tensor]:
    """(attention mask for the model's forward, position ids ``[B, N]``).

    Models with per-layer attention types (Gemma 2/3: ``layer_types``) get a dict with one
    mask per type, the sliding ones windowed; a model with a ``sliding_window`` but no
    layer types gets the windowed mask for every layer.
    """
    allowed, q_pos, k_pos = batch_layout(items, max_prefix, max_new)
    positions = torch.from_numpy(q_pos).to(device)
    window = getattr(text_config, "sliding_window", None)
    windowed = allowed
    if window:
        distance = q_pos[:, :, None] - k_pos[:, None, :]
        windowed = allowed & ((distance < window) | (k_pos[:, None, :] < 0))
    layer_types = getattr(text_config, "layer_types", None)
    if layer_types:
        masks = {
            kind: _bias(windowed if kind == "sliding_attention" else allowed, dtype, device)
            for kind in set(layer_types)
        }
        return masks, positions
    return _bias(windowed, dtype, device), positions
