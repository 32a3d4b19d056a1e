"""The draft's hidden states for semantic verification: the last-layer state after the
final norm at each drafted token's predicting position, returned only when asked, with
the drafted tokens unchanged."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
import torch

from edgespec.runtime.backends.base import hidden_state_drafter
from edgespec.runtime.backends.hybrid_draft import HybridDraft
from edgespec.runtime.backends.ngram import NgramDrafter
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.backends.tree_draft import TreeDraft
from edgespec.runtime.testing import tiny_gemma3

CONTEXT = (3, 1, 4, 1, 5, 9)


@torch.no_grad()
def _reference(model: Any, context: tuple[int, ...], tokens: tuple[int, ...]) -> np.ndarray:
    """The base model's last hidden state at each token's predicting position, from one
    full forward without cache."""
    seq = torch.tensor([[*context, *tokens]])
    states = model.model(input_ids=seq).last_hidden_state[0]
    start = len(context) - 1
    rows: np.ndarray = states[start : start + len(tokens)].float().numpy()
    return rows


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_hidden_states_are_the_predicting_positions_and_tokens_are_unchanged(
    kind: str, draft_model: Any
) -> None:
    model = draft_model if kind == "llama" else tiny_gemma3(seed=3)
    plain = TransformersDraft(model).propose(CONTEXT, 5, 0.0, np.random.default_rng(0))
    assert plain.hidden is None  # not asked
    draft = TransformersDraft(model)
    assert draft.return_hidden(True) == model.config.hidden_size
    first = draft.propose(CONTEXT, 5, 0.0, np.random.default_rng(0))
    assert first.token_ids == plain.token_ids and first.hidden is not None
    np.testing.assert_allclose(first.hidden, _reference(model, CONTEXT, first.token_ids),
                               atol=1e-4)  # fmt: skip
    # the next block on the cached context (the last token not yet forwarded)
    context = (*CONTEXT, *first.token_ids[:3])
    second = draft.propose(context, 3, 0.0, np.random.default_rng(0))
    assert second.hidden is not None and second.hidden.shape == (3, model.config.hidden_size)
    np.testing.assert_allclose(second.hidden, _reference(model, context, second.token_ids),
                               atol=1e-4)  # fmt: skip
    draft.return_hidden(False)
    assert draft.propose(context, 2, 0.0, np.random.default_rng(0)).hidden is None


def test_which_drafters_return_hidden_states(draft_model: Any) -> None:
    with pytest.raises(ValueError) as info:  # lookup tokens are not the draft's own argmax
        hidden_state_drafter(HybridDraft(draft_model))
    assert str(info.value) == (
        "HybridDraft cannot return its hidden states (its prompt-lookup tokens are not the "
        "draft model's own: the decision head would judge the draft's hidden state of another "
        "token)"
    )
    with pytest.raises(ValueError, match="TreeDraft cannot return its hidden states"):
        hidden_state_drafter(TreeDraft(draft_model, (2, 1)))
    with pytest.raises(ValueError, match="NgramDrafter cannot return its hidden states"):
        hidden_state_drafter(NgramDrafter(vocab_size=64))


def test_drafts_over_one_shared_model_leave_no_hook_and_read_only_their_own_states(
    draft_model: Any,
) -> None:
    """The hook stayed on the shared model after a draft returned hidden states (a server's
    co-located draft, one per lossy fused run, never turned it off): every later forward
    of any draft ran every left hook, each copying a state to the host and keeping its
    draft alive, and drafts in other threads overwrote each other's last state."""
    base = draft_model.model
    alone = TransformersDraft(draft_model)
    alone.return_hidden(True)
    expected = {c: alone.propose(c, 4, 0.0, np.random.default_rng(0)) for c in (CONTEXT, (7, 2))}
    assert len(base._forward_hooks) == 0  # registered for each forward only
    results: dict[tuple[int, ...], Any] = {}
    barrier = threading.Barrier(2)

    def run(context: tuple[int, ...]) -> None:
        draft = TransformersDraft(draft_model)
        draft.return_hidden(True)
        barrier.wait()
        for _ in range(20):  # forwards of both threads interleave on the one model
            results[context] = draft.propose(context, 4, 0.0, np.random.default_rng(0))
            draft.reset()

    threads = [threading.Thread(target=run, args=(c,)) for c in expected]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for context, proposal in expected.items():
        assert results[context].token_ids == proposal.token_ids
        np.testing.assert_array_equal(results[context].hidden, proposal.hidden)
    assert len(base._forward_hooks) == 0
