"""The LM head applied outside the model's forward, in vocabulary blocks.

With a handful of rows (a γ + 1 verification block) and Gemma 3's 262k-row head, one CPU
GEMM over the whole matrix is slow; :func:`blocked_head` runs it a block of rows at a time.
:func:`plain_head` says when that is the model's own head (no bias, no soft-cap).
"""

from __future__ import annotations

from typing import Any

import torch

# Models whose logits are exactly ``lm_head(base_model(...).last_hidden_state)`` (no soft-cap,
# no logit scale): for these the head can be applied here, in vocabulary blocks.
_PLAIN_HEAD_TYPES = frozenset({"llama", "gemma", "gemma3_text", "mistral", "qwen2", "qwen3"})
_HEAD_BLOCK_ROWS = 2048
BLOCKED_HEAD_MAX_ROWS = 48


def plain_head(model: Any) -> torch.Tensor | None:
    """The output-embedding matrix when ``model``'s logits are a bias-free linear head over
    its base model's last hidden state, else ``None``."""
    config = model.config
    head = getattr(model, "lm_head", None)
    if (
        getattr(config, "model_type", None) not in _PLAIN_HEAD_TYPES
        or not isinstance(head, torch.nn.Linear)
        or head.bias is not None
        or getattr(config, "final_logit_softcapping", None) is not None
        or not hasattr(model, "model")
    ):
        return None
    weight: torch.Tensor = head.weight
    return weight


def blocked_head(hidden: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``hidden @ weight.T`` for a few rows, one block of 2,048 vocabulary rows at a time.

    With a handful of rows (a γ + 1 verification block) and a 262k-row head, the CPU GEMM
    for the whole matrix ran about 2× slower than for one row on one CPU thread (Gemma 3 270M);
    blocks that stay in cache cut the 5-row head by about a fifth on 1 thread, and on 2
    threads a token tree's 19-row head by about a quarter, a 48-row head by about a seventh
    (medians; docs/PERFORMANCE.md, *Backend A/B measurements*).
    Used for 2..48 rows; one row (plain decoding) gains nothing.
    """
    rows = hidden.reshape(-1, hidden.shape[-1])
    out = rows.new_empty((rows.shape[0], weight.shape[0]))
    for start in range(0, weight.shape[0], _HEAD_BLOCK_ROWS):
        block = weight[start : start + _HEAD_BLOCK_ROWS]
        out[:, start : start + block.shape[0]] = rows @ block.T
    return out.reshape(*hidden.shape[:-1], weight.shape[0])
