"""The drafting server's batched draft (:mod:`edgespec.runtime.edge.batched_draft`) drafts
what the single-session draft drafts, round after round with its KV cropped back, for a
plain and a trimmed-vocabulary model; the trimmed one drafts through its kept head and the
drafting server's output with it stays lossless."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from edgespec.models.trimmed import TrimmedDraftConfig, TrimmedVocabDraft
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.edge.batched_draft import BatchedDraftModel, DraftState
from edgespec.runtime.edge.drafting_server import run_drafting_server
from edgespec.runtime.testing import VOCAB
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.device import on_test_device


def _single_session_blocks(
    model: Any, contexts: Sequence[Sequence[int]], gamma: int
) -> list[tuple[int, ...]]:
    rng = np.random.default_rng(0)
    return [TransformersDraft(model).propose(c, gamma, 0.0, rng).token_ids for c in contexts]


def _rounds_agree(model: Any, batched: BatchedDraftModel) -> None:
    """Three rounds over three sessions whose committed sequences follow the draft for a
    while, then diverge (the KV is cropped back): batched blocks = single-session ones."""
    contexts = [[3, 4, 5], [9, 8, 7, 6, 5, 4, 3], [11]]
    states = [DraftState() for _ in contexts]
    for round_index in range(3):
        gammas = [3, 1 + round_index, 2]
        blocks = batched.draft(states, contexts, gammas)
        for context, block, gamma in zip(contexts, blocks, gammas, strict=True):
            assert block == _single_session_blocks(model, [context], gamma)[0]
        for i, block in enumerate(blocks):  # accept i tokens, then a token of our own
            contexts[i] = [*contexts[i], *block[:i], (round_index * 7 + i) % VOCAB]


def test_batched_blocks_equal_single_session_drafts(draft_model: Any) -> None:
    _rounds_agree(draft_model, BatchedDraftModel(draft_model))


def _tiny_trimmed_draft(kept: Sequence[int]) -> TrimmedVocabDraft:
    config = TrimmedDraftConfig(
        draft_token_ids=list(kept), vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
        num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=256, bos_token_id=None, pad_token_id=None, eos_token_id=None,
    )  # fmt: skip
    with torch.random.fork_rng():
        torch.manual_seed(3)
        draft = TrimmedVocabDraft(config)
    with torch.no_grad():
        draft.model.embed_tokens.weight.mul_(20.0)  # well-separated argmaxes
    draft.eval()  # type: ignore[no-untyped-call]
    return on_test_device(draft)


def test_a_trimmed_vocabulary_draft_drafts_through_its_kept_head(
    verifier: RemoteVerifier, target: TransformersTarget
) -> None:
    """Inputs outside the kept vocabulary go in as "other"; blocks hold target ids of kept
    tokens only, the single-session draft's, and the output stays lossless."""
    kept = list(range(1, VOCAB, 2))
    trimmed = _tiny_trimmed_draft(kept)
    draft = BatchedDraftModel(trimmed)
    _rounds_agree(trimmed, draft)
    prompts = [(2, 4, 6), (3, 5), (8,)]
    result = run_drafting_server(
        verifier, draft, prompts, batch_size=2, gamma=3, max_new_tokens=8, pipelined=True
    )
    assert result.output_token_ids == tuple(target_greedy_decode(target, p, 8) for p in prompts)
