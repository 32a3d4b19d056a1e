"""Synthetic causal LMs built in-process (no downloads) for tests and benchmarks."""

from __future__ import annotations

import copy
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from edgespec.models.seeding import torch_seeded

VOCAB = 64


def tiny_llama(
    seed: int = 0,
    num_layers: int = 2,
    vocab_size: int = VOCAB,
    hidden_size: int = 32,
    logit_scale: float = 30.0,
    eos_token_id: int | None = None,
    quiet_layers_from: int | None = None,
    quiet_scale: float = 0.05,
) -> Any:
    """A random fp32 Llama, seeded locally (the global torch RNG is left as it was).

    ``logit_scale`` stretches the LM head so the top logits are well separated: float
    rounding from padding/batching then never flips an argmax. ``quiet_layers_from=k``
    scales the residual outputs of layers ≥ k by ``quiet_scale``, so the first k layers
    (see :func:`layer_truncated_copy`) make a cheaper draft that mostly agrees.
    """
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        bos_token_id=None,
        pad_token_id=None,
        eos_token_id=eos_token_id,
    )
    model = _seeded(LlamaForCausalLM, config, seed)
    with torch.no_grad():
        model.lm_head.weight.mul_(logit_scale)
        if quiet_layers_from is not None:
            for layer in model.model.layers[quiet_layers_from:]:
                layer.self_attn.o_proj.weight.mul_(quiet_scale)
                layer.mlp.down_proj.weight.mul_(quiet_scale)
    model.generation_config.eos_token_id = eos_token_id
    model.eval()  # type: ignore[no-untyped-call]
    return model


SYNTHETIC_VOCAB = 4096


def synthetic_target(num_layers: int = 12, hidden_size: int = 512) -> Any:
    """The benchmarks' synthetic target (``edgespec bench serve``, ``bench prefix``): a
    seeded Llama, vocabulary 4096, whose layers ≥ 2 are quiet, so its first 2 layers
    (:func:`layer_truncated_copy`) make a draft that often agrees."""
    return tiny_llama(0, num_layers=num_layers, vocab_size=SYNTHETIC_VOCAB,
                      hidden_size=hidden_size, logit_scale=5.0, quiet_layers_from=2,
                      quiet_scale=0.03)  # fmt: skip


def describe_synthetic(num_layers: int, hidden_size: int) -> str:
    return (f"synthetic Llama ({num_layers} layers, hidden {hidden_size}, vocabulary "
            f"{SYNTHETIC_VOCAB}; layers >= 2 quiet)")  # fmt: skip


def _seeded(model_class: Any, config: Any, seed: int) -> Any:
    """``model_class(config)`` initialised from ``seed``; the global torch RNG is left as it was."""
    with torch_seeded(seed):
        return model_class(config)


def noisy_copy(model: Any, noise: float, seed: int = 1) -> Any:
    """A draft that agrees with ``model`` often but not always: its weights plus noise."""
    draft = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in draft.parameters():
            step = torch.randn(param.shape, generator=generator).to(param.device)  # CPU draws
            param.add_(noise * step * param.std())
    draft.eval()  # type: ignore[no-untyped-call]
    return draft


def layer_truncated_copy(model: Any, num_layers: int) -> Any:
    """The first ``num_layers`` decoder layers of ``model`` with its embeddings and head."""
    config = copy.deepcopy(model.config)
    config.num_hidden_layers = num_layers
    if getattr(config, "layer_types", None) is not None:
        config.layer_types = config.layer_types[:num_layers]
    draft = LlamaForCausalLM(config)
    draft.load_state_dict(model.state_dict(), strict=False)
    draft.generation_config.eos_token_id = model.generation_config.eos_token_id
    draft.eval()  # type: ignore[no-untyped-call]
    return draft


def tiny_gemma3(
    seed: int = 0,
    num_layers: int = 2,
    sliding_window: int = 512,
    layer_types: list[str] | None = None,
    final_logit_softcapping: float | None = None,
) -> Any:
    """A random fp32 Gemma 3 text model (sliding-window and global layers, optional logit
    soft-cap), seeded locally like :func:`tiny_llama`."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=256,
        sliding_window=sliding_window,
        layer_types=layer_types,
        final_logit_softcapping=final_logit_softcapping,
        bos_token_id=None,
        pad_token_id=None,
        eos_token_id=None,
    )
    model = _seeded(Gemma3ForCausalLM, config, seed)
    model.eval()  # type: ignore[no-untyped-call]
    return model
