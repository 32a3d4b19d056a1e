"""Tiny randomly initialised models built in the tests (no downloads)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from edgespec.models.trimmed import TrimmedDraftConfig, TrimmedVocabDraft

VOCAB = 48
SPECIAL = {"bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0}


def tiny_target(seed: int = 0) -> Any:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=SPECIAL["bos_token_id"],
        eos_token_id=SPECIAL["eos_token_id"],
        pad_token_id=SPECIAL["pad_token_id"],
    )
    model = LlamaForCausalLM(config)
    # transformers' PreTrainedModel.eval is unannotated
    model.eval()  # type: ignore[no-untyped-call]
    return model


def tiny_draft(kept: Sequence[int], seed: int = 1, layers: int = 1) -> TrimmedVocabDraft:
    torch.manual_seed(seed)
    config = TrimmedDraftConfig(
        draft_token_ids=list(kept),
        target_name="",
        vocab_size=VOCAB,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        **SPECIAL,
    )
    draft = TrimmedVocabDraft(config)
    # transformers' PreTrainedModel.eval is unannotated
    draft.eval()  # type: ignore[no-untyped-call]
    return draft
