"""A request's bias, penalties and cuts made on the drafter's rows (runtime/backends/
draft_shaping.py): a row shaped as the target's oracle shapes it, through a trimmed draft's
columns and past a narrower vocabulary; and the draft that is the target's own model has
every token accepted under a repetition penalty (greedy) and under cuts (sampling), its
output the target-only one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from edgespec.core.types import SamplingParams
from edgespec.models.trimmed import TrimmedDraftConfig, TrimmedVocabDraft
from edgespec.runtime.backends.draft_shaping import DraftShaping, TokenColumns, draft_shaping
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.backends.tree_draft import TreeDraft
from edgespec.runtime.sampling import logits_to_probs
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import speculative_generate
from tests.runtime.greedy_oracles import penalized, penalized_greedy

BIAS = ((3, 2.5), (8, -1.0))
SHAPING = DraftShaping(num_prompt_tokens=2, logit_bias=BIAS, repetition_penalty=1.3,
                       frequency_penalty=0.5, presence_penalty=0.25)  # fmt: skip
CONTEXT = (1, 2, 3, 3, 5, 1)
"""Prompt (1, 2), then output 3, 3, 5, 1."""


def _oracle(row: np.ndarray, context: tuple[int, ...]) -> np.ndarray:
    """The target's processing of ``row`` over the whole vocabulary (tests/runtime/
    greedy_oracles.py): the bias added, then the penalties."""
    biased = np.array(row, dtype=np.float32, copy=True)
    for token, bias in BIAS:
        biased[token] += np.float32(bias)
    return penalized(biased, context, 2, (1.3, 0.5, 0.25))


def test_a_row_is_biased_and_penalized_as_the_targets() -> None:
    row = np.random.default_rng(0).normal(size=10).astype(np.float32)
    np.testing.assert_array_equal(SHAPING.logits(row, CONTEXT), _oracle(row, CONTEXT))
    assert SHAPING.argmax(row, CONTEXT) == int(np.argmax(_oracle(row, CONTEXT)))
    np.testing.assert_array_equal(row, np.random.default_rng(0).normal(size=10).astype(np.float32))


def test_a_trimmed_drafts_columns_are_shaped_by_their_target_ids() -> None:
    """Columns hold target ids 8, 3, 5, 1; token 2 (prompt) and 9 have none."""
    columns = TokenColumns.of(np.array([8, 3, 5, 1]))
    row = np.array([0.5, -1.0, 2.0, 1.5], dtype=np.float32)
    whole = np.zeros(10, dtype=np.float32)
    whole[columns.target_ids] = row
    expected = _oracle(whole, (*CONTEXT, 9))[columns.target_ids]
    np.testing.assert_array_equal(SHAPING.logits(row, (*CONTEXT, 9), columns), expected)
    assert columns.column_of.tolist() == [-1, 3, -1, 1, -1, 2, -1, -1, 0]


def test_tokens_beyond_a_narrower_vocabulary_are_left_out() -> None:
    row = np.array([1.0, 2.0, -0.5, 0.25], dtype=np.float32)  # 4 tokens; context has 5, 8
    whole = np.concatenate([row, np.zeros(6, dtype=np.float32)])
    np.testing.assert_array_equal(SHAPING.logits(row, CONTEXT), _oracle(whole, CONTEXT)[:4])


def test_a_sampling_drafts_distribution_is_the_shaped_row_cut() -> None:
    row = np.random.default_rng(1).normal(size=10).astype(np.float32)
    shaping = DraftShaping(2, BIAS, 1.3, 0.5, 0.25, top_k=5, top_p=0.9, min_p=0.05)
    expected = logits_to_probs(_oracle(row, CONTEXT)[None, :], 0.7, top_p=0.9, top_k=5,
                               min_p=0.05)[0]  # fmt: skip
    np.testing.assert_array_equal(shaping.probs(row, CONTEXT, 0.7), expected)
    assert (expected == 0).sum() >= 5


def test_a_request_shapes_drafts_only_where_its_rows_change() -> None:
    assert draft_shaping(SamplingParams(), 3) is None
    assert draft_shaping(SamplingParams(top_k=2, top_p=0.5), 3) is None  # greedy: no cut
    cut = draft_shaping(SamplingParams(temperature=1.0, top_k=2), 3)
    assert cut == DraftShaping(num_prompt_tokens=3, top_k=2) and not cut.moves_logits
    penalized_greedy_shaping = draft_shaping(SamplingParams(repetition_penalty=1.2, top_p=0.5), 4)
    assert penalized_greedy_shaping == DraftShaping(4, repetition_penalty=1.2)
    assert penalized_greedy_shaping.moves_logits
    assert draft_shaping(SamplingParams(logit_bias=((1, 3.0),)), 0) == DraftShaping(0, ((1, 3.0),))


Run = tuple[tuple[int, ...], int, int]


def _own_draft_run(sampling: SamplingParams, vocab: int, scale: float) -> Run:
    """A run whose draft is the target's own model: (output, drafted, accepted)."""
    target = TransformersTarget(tiny_llama(seed=3, vocab_size=vocab, logit_scale=scale))
    draft = TransformersDraft(tiny_llama(seed=3, vocab_size=vocab, logit_scale=scale))
    result = speculative_generate(target, draft, (1, 2, 3), 4, sampling)
    return result.output_token_ids, result.request.num_drafted, result.request.num_accepted


def test_the_targets_own_draft_is_accepted_whole_under_penalties() -> None:
    """Unshaped, the draft proposes the repeats the penalty turns the target from (most
    rounds rejected at once); shaped, it proposes the target's penalized argmax."""
    sampling = SamplingParams(max_new_tokens=24, repetition_penalty=1.8, frequency_penalty=0.6,
                              logit_bias=((7, 1.5),))  # fmt: skip
    output, drafted, accepted = _own_draft_run(sampling, vocab=32, scale=3.0)
    target = TransformersTarget(tiny_llama(seed=3, vocab_size=32, logit_scale=3.0))
    assert output == penalized_greedy(target, (1, 2, 3), (1.8, 0.6, 0.0), 24, ((7, 1.5),))
    assert len(set(output)) > 8  # the penalties do turn it from repeating
    assert accepted == drafted > 0


@pytest.mark.parametrize("cuts", [{"top_k": 2}, {"top_p": 0.6, "min_p": 0.2}])
def test_the_targets_own_draft_is_accepted_under_cuts(cuts: dict[str, float]) -> None:
    """Sampling at temperature 1 over a flat row: q cut as p is equal to it, so every draft
    token is accepted (up to the float32 rounding of q); unshaped, about the mass the cuts
    drop is rejected."""
    sampling = SamplingParams(temperature=1.0, max_new_tokens=32, seed=5, **cuts)  # type: ignore[arg-type]
    _, drafted, accepted = _own_draft_run(sampling, vocab=6, scale=1.5)
    assert accepted >= drafted - 1 and drafted > 16


def test_a_trimmed_draft_is_shaped_through_its_kept_head() -> None:
    """A bias on kept token 20 wins every step, one on token 5 (not kept) is left out; a
    repetition penalty turns the draft from its own unshaped block."""
    config = TrimmedDraftConfig(
        draft_token_ids=list(range(10, 50)), vocab_size=64, hidden_size=32,
        intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=64, bos_token_id=None, pad_token_id=None, eos_token_id=None,
    )  # fmt: skip
    with torch.random.fork_rng():
        torch.manual_seed(3)
        draft = TransformersDraft(TrimmedVocabDraft(config).eval())
    rng, context = np.random.default_rng(0), (12, 30, 41)
    plain = draft.propose(context, 4, 0.0, rng).token_ids
    biased = DraftShaping(3, logit_bias=((5, 50.0), (20, 50.0)))
    assert draft.propose(context, 3, 0.0, rng, biased).token_ids == (20, 20, 20) != plain[:3]
    repeats = DraftShaping(3, repetition_penalty=1e4, presence_penalty=2.0)
    shaped = draft.propose(context, 4, 0.0, rng, repeats).token_ids
    assert plain == (41, 41, 41, 41)  # unshaped, it repeats the prompt's last token
    assert len(set(shaped)) == 4 and not set(shaped) & set(context)


def test_a_token_tree_of_the_targets_own_model_is_shaped_along_its_paths() -> None:
    """Every node's row is penalized after its own path: the target's own model drafting a
    tree has a whole path accepted every round (γ + 1 = 5 tokens), its output the target's."""
    sampling = SamplingParams(max_new_tokens=24, repetition_penalty=1.8, frequency_penalty=0.6,
                              logit_bias=((7, 1.5),))  # fmt: skip
    target = TransformersTarget(tiny_llama(seed=3, vocab_size=32, logit_scale=3.0))
    draft = TreeDraft(tiny_llama(seed=3, vocab_size=32, logit_scale=3.0), branching=(2, 2, 1, 1),
                      lookup=False)  # fmt: skip
    result = speculative_generate(target, draft, (1, 2, 3), 4, sampling)
    assert result.output_token_ids == penalized_greedy(
        target, (1, 2, 3), (1.8, 0.6, 0.0), 24, ((7, 1.5),)
    )
    assert result.request.num_rounds == 5
