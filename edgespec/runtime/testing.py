"""Tiny causal LMs built in-process (no downloads) for runtime tests and benchmarks."""

from __future__ import annotations

import copy
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM

VOCAB = 64


def tiny_llama(
    seed: int = 0,
    num_layers: int = 2,
    vocab_size: int = VOCAB,
    hidden_size: int = 32,
    logit_scale: float = 30.0,
    eos_token_id: int | None = None,
) -> Any:
    """A random fp32 Llama. ``logit_scale`` stretches the LM head so the top logits are
    well separated: float rounding from padding/batching then never flips an argmax."""
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
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    torch.random.set_rng_state(generator_state)
    with torch.no_grad():
        model.lm_head.weight.mul_(logit_scale)
    model.generation_config.eos_token_id = eos_token_id
    return model.eval()


def noisy_copy(model: Any, noise: float, seed: int = 1) -> Any:
    """A draft that agrees with ``model`` often but not always: its weights plus noise."""
    draft = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in draft.parameters():
            param.add_(noise * torch.randn(param.shape, generator=generator) * param.std())
    return draft.eval()
