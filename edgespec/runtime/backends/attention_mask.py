"""Explicit attention masks for every padded forward pass of the transformers target.

:class:`~edgespec.runtime.backends.transformers_backend.TransformersTarget` runs a batch as
one padded tensor: each row's cached prefix left-padded to P columns, its new tokens
left-padded to N. A model left to build its own mask from a 2-D padding mask places the
causal diagonal and the sliding window by *cache column*, not by token position, so a row
whose new tokens are left-padded loses its oldest in-window keys (Gemma 2/3: wrong logits
as soon as cached length + padding reaches the window). Every pass therefore gets a mask
built here from true token positions: the additive bias ``[B, 1, N, P + N]`` (0 = attend,
dtype minimum = masked), one per attention kind the model declares, and the position ids.
Token trees (:mod:`edgespec.core.tree`) use the same path: nodes sit at their depth's
position and attend to their ancestors only.

:func:`attention_layout` reads which attention kinds a model has and refuses, with a
:class:`UnsupportedAttentionError` that names the reason, any model this module cannot mask
exactly (bidirectional or chunked attention, unknown layer types, kernels that ignore
explicit masks); :func:`check_exact_masking` refuses one whose padded passes do not
reproduce its own logits. Supported: ``full_attention`` (causal) and ``sliding_attention`` (causal,
key within ``sliding_window`` positions of the query: ``q - k < window``), per layer via
``config.layer_types`` or for every layer via ``config.sliding_window``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from edgespec.core.tree import ancestor_matrix, node_depths
from edgespec.runtime.backends.base import ForwardItem, ForwardOutput

Mask = torch.Tensor | dict[str, torch.Tensor]

FULL = "full_attention"
SLIDING = "sliding_attention"
SUPPORTED_LAYER_TYPES = frozenset({FULL, SLIDING})
_MASKING_KERNELS = frozenset({"eager", "sdpa", "edgespec_batch_invariant"})
"""Attention kernels that apply an explicit 4-D additive mask as given."""


class UnsupportedAttentionError(ValueError):
    """The model's attention cannot be masked exactly by :func:`batch_attention`."""


@dataclass(frozen=True, slots=True)
class AttentionLayout:
    """How a model's layers attend.

    ``layer_types``: the kinds the model's forward expects one mask each for (its
    ``config.layer_types``), or ``None`` when it takes a single mask for every layer.
    ``sliding_window``: the window of the sliding layers (all layers when ``layer_types``
    is ``None``), or ``None`` when no layer slides.
    """

    layer_types: frozenset[str] | None
    sliding_window: int | None


def attention_layout(model: Any) -> AttentionLayout:
    """The attention layout of ``model``, or :class:`UnsupportedAttentionError`."""
    config = model.config
    text = config.get_text_config()
    name = getattr(config, "model_type", type(model).__name__)
    kernel = getattr(config, "_attn_implementation", None) or "eager"
    if kernel not in _MASKING_KERNELS:
        raise UnsupportedAttentionError(
            f"model {name!r}: attention kernel {kernel!r} does not apply explicit masks; "
            f"load it with attn_implementation one of {sorted(_MASKING_KERNELS)}"
        )
    for flag in ("use_bidirectional_attention", "attention_chunk_size", "use_alibi", "alibi"):
        if getattr(text, flag, None):
            raise UnsupportedAttentionError(
                f"model {name!r}: {flag}={getattr(text, flag)!r} is not supported "
                f"(supported attention: {sorted(SUPPORTED_LAYER_TYPES)})"
            )
    window = getattr(text, "sliding_window", None)
    if getattr(text, "use_sliding_window", True) is False:
        window = None
    layer_types = getattr(text, "layer_types", None)
    if not layer_types:
        return AttentionLayout(None, int(window) if window else None)
    unknown = sorted(set(layer_types) - SUPPORTED_LAYER_TYPES)
    if unknown:
        raise UnsupportedAttentionError(
            f"model {name!r}: layer types {unknown} are not supported "
            f"(supported: {sorted(SUPPORTED_LAYER_TYPES)})"
        )
    if SLIDING in layer_types and not window:
        raise UnsupportedAttentionError(
            f"model {name!r}: sliding_attention layers but no sliding_window in the config"
        )
    sliding = int(window) if window and SLIDING in layer_types else None
    return AttentionLayout(frozenset(layer_types), sliding)


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


def key_order(
    items: Sequence[ForwardItem], max_prefix: int, max_new: int, device: Any
) -> torch.Tensor | None:
    """``[B, P + N]``: each row's key columns with its real keys first, in column order
    (cached prefix, then new tokens), padding after: the order in which the batch-invariant
    attention (:mod:`~edgespec.runtime.backends.batch_invariant`) reduces over keys, the
    same for a row alone or beside any others. ``None`` when nothing is padded (the
    layout is that order already)."""
    if all(i.kv_len == max_prefix and len(i.new_token_ids) == max_new for i in items):
        return None
    order = np.empty((len(items), max_prefix + max_new), dtype=np.int64)
    for row, item in enumerate(items):
        first, pad = max_prefix - item.kv_len, max_new - len(item.new_token_ids)
        order[row] = np.concatenate(
            [
                np.arange(first, max_prefix),
                np.arange(max_prefix + pad, max_prefix + max_new),
                np.arange(first),
                np.arange(max_prefix, max_prefix + pad),
            ]
        )
    return torch.from_numpy(order).to(device)


def in_key_order(mask: Mask, order: torch.Tensor | None) -> Mask:
    """``mask`` (one or one per attention kind) with its key axis in ``order``."""
    if order is None:
        return mask
    if isinstance(mask, dict):
        return {kind: in_key_order(m, order) for kind, m in mask.items()}  # type: ignore[misc]
    index = order[:, None, None, :].expand(-1, mask.shape[1], mask.shape[2], -1)
    return mask.gather(3, index)


def _bias(allowed: npt.NDArray[np.bool_], dtype: torch.dtype, device: Any) -> torch.Tensor:
    bias = torch.zeros(allowed.shape, dtype=dtype)
    bias.masked_fill_(torch.from_numpy(~allowed), torch.finfo(dtype).min)
    return bias[:, None].to(device)


def _windowed(
    allowed: npt.NDArray[np.bool_],
    q_pos: npt.NDArray[np.int64],
    k_pos: npt.NDArray[np.int64],
    window: int,
) -> npt.NDArray[np.bool_]:
    """``allowed`` with keys ``window`` or more positions behind the query masked (padding
    keys, position -1, keep what ``allowed`` says: only padding queries see them)."""
    near = (q_pos[:, :, None] - k_pos[:, None, :]) < window
    result: npt.NDArray[np.bool_] = allowed & (near | (k_pos[:, None, :] < 0))
    return result


def batch_attention(
    items: Sequence[ForwardItem],
    max_prefix: int,
    max_new: int,
    layout: AttentionLayout,
    dtype: torch.dtype,
    device: Any,
) -> tuple[Mask, torch.Tensor]:
    """(attention mask for the model's forward, position ids ``[B, N]``).

    A model with per-layer attention types gets a dict with one mask per type, the sliding
    ones windowed; otherwise one mask, windowed when the model has a sliding window.
    """
    allowed, q_pos, k_pos = batch_layout(items, max_prefix, max_new)
    positions = torch.from_numpy(q_pos).to(device)
    window = layout.sliding_window
    windowed = allowed if window is None else _windowed(allowed, q_pos, k_pos, window)
    if layout.layer_types is None:
        return _bias(windowed, dtype, device), positions
    masks = {
        kind: _bias(windowed if kind == SLIDING else allowed, dtype, device)
        for kind in layout.layer_types
    }
    return masks, positions


@torch.inference_mode()
def check_exact_masking(
    model: Any,
    forward_pass: Callable[[Sequence[ForwardItem]], list[ForwardOutput]],
    layout: AttentionLayout,
    max_context_tokens: int,
) -> None:
    """Refuse ``model`` unless a padded two-row pass (``forward_pass``, with this module's
    masks) reproduces its own unpadded logits.

    Probe: a sequence S one window plus four tokens long (12 tokens without a window;
    at most 600 and the model's context). Its prefix S[:-2] is forwarded cold, then
    S[-2:] in one pass beside a 5-token cold start, so S's new tokens are left-padded
    past the window: exactly where a mask built from cache columns goes wrong. Each
    row's logits must match the model's own forward over the unpadded tokens.
    """
    window = layout.sliding_window or 8
    length = max(8, min(window + 4, 600, max_context_tokens))
    vocab_size = int(model.config.get_text_config().vocab_size)
    seq = tuple((7 * i + 3) % vocab_size for i in range(length))
    side = seq[:5]
    reference = _own_logits(model, seq, 3)
    expected = [reference[:1], reference[1:], _own_logits(model, side, 1)]
    prefix = forward_pass([ForwardItem(None, 0, seq[:-2], 1)])[0]
    pair = forward_pass(
        [ForwardItem(prefix.kv, length - 2, seq[-2:], 2), ForwardItem(None, 0, side, 1)]
    )
    got = [prefix.logits, pair[0].logits, pair[1].logits]
    tolerance = 1e-3 if next(model.parameters()).dtype == torch.float32 else 5e-2
    for what, want, have in zip(
        ("cold prefix", "padded row", "cold row"), expected, got, strict=True
    ):
        want_np = want.float().cpu().numpy()
        error = float(np.abs(want_np - have).max())
        scale = 1.0 + float(np.abs(want_np).max())
        if not error <= tolerance * scale:
            raise UnsupportedAttentionError(
                f"model {getattr(model.config, 'model_type', '?')!r}: explicit "
                f"attention masks do not reproduce its own logits ({what} of a "
                f"{length}-token probe off by {error:.3g}); refusing to serve it "
                "approximately"
            )


def _own_logits(model: Any, tokens: Sequence[int], keep: int) -> torch.Tensor:
    """The model's own forward (its own masks, no cache, no padding): last ``keep`` rows."""
    ids = torch.tensor([list(tokens)], device=next(model.parameters()).device)
    logits: torch.Tensor = model(input_ids=ids, logits_to_keep=keep).logits[0]
    return logits
