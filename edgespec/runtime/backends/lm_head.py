"""The LM head applied outside the model's forward, in vocabulary blocks.

With a handful of rows (a γ + 1 verification block) and Gemma 3's 262k-row head,
:func:`blocked_head` runs the product a block of vocabulary rows at a time, meant to keep
each block in cache; :func:`plain_head` says when that is the model's own head (no bias, no
soft-cap). It is off unless asked for (``TransformersTarget(blocked_head_logits=True)``):
on this project's CPUs it was no faster than one GEMM at 5 rows on one thread and slower
at 19 and 48 rows on two (``benchmarks/probes/head_speed.py``, the results files it names
in docs/PERFORMANCE.md). :func:`head_logits` is the model's own head after a pass of its
body (a pass that returns hidden states), and :func:`hidden_head_problem` says why a model's
logits are not that (a logit scale; no body and head to take apart).
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
    """``hidden @ weight.T`` for a few rows, one block of 2,048 vocabulary rows at a time
    (bit-identical to one product; used for 2..48 rows when asked for)."""
    rows = hidden.reshape(-1, hidden.shape[-1])
    out = rows.new_empty((rows.shape[0], weight.shape[0]))
    for start in range(0, weight.shape[0], _HEAD_BLOCK_ROWS):
        block = weight[start : start + _HEAD_BLOCK_ROWS]
        out[:, start : start + block.shape[0]] = rows @ block.T
    return out.reshape(*hidden.shape[:-1], weight.shape[0])


def head_logits(model: Any, hidden: torch.Tensor) -> torch.Tensor:
    """``model``'s own head over its body's ``hidden`` states (as its causal-LM forward
    computes it, soft-capped when the config says so, e.g. Gemma 2/3; a model for which
    :func:`hidden_head_problem` says why not is not served so)."""
    logits: torch.Tensor = model.lm_head(hidden)
    cap = getattr(model.config.get_text_config(), "final_logit_softcapping", None)
    if cap is not None:
        logits = torch.tanh(logits / cap) * cap
    return logits


def hidden_head_problem(model: Any) -> str | None:
    """Why ``model``'s logits are not ``lm_head`` (soft-capped when its config says so) over
    its body's last hidden state, as a pass that returns hidden states computes them for
    its whole batch (``None``: they are): a logit scale (Granite's ``logits_scaling``,
    Cohere's ``logit_scale``) would be left out, and a model without ``.model`` and
    ``.lm_head`` (GPT-NeoX) has no such pass."""
    config = model.config.get_text_config()
    kind = getattr(config, "model_type", None)
    if not hasattr(model, "model") or not isinstance(getattr(model, "lm_head", None),
                                                     torch.nn.Linear):  # fmt: skip
        return f"the target ({kind}) has no .model body and .lm_head to take them from"
    for name in ("logits_scaling", "logit_scale"):
        value = getattr(config, name, None)
        if value is not None and value != 1:
            return (f"the target ({kind}) scales its logits ({name} {value}), which its "
                    "passes that return hidden states do not")  # fmt: skip
    return None
