"""TreeDraft's settings checks (exact messages), one-deep trees drafted back to back on the
cache, and the cache holding only committed tokens after every proposal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")

import torch

from edgespec.runtime.backends.tree_draft import TreeDraft
from edgespec.runtime.testing import tiny_llama

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def model() -> Any:
    return tiny_llama(seed=3, logit_scale=1.0)


def _top(model: Any, seq: Sequence[int], k: int) -> tuple[int, ...]:
    with torch.inference_mode():
        row = model(input_ids=torch.tensor([list(seq)])).logits[0, -1]
    return tuple(int(i) for i in torch.topk(row, k).indices.tolist())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"branching": (2, 0)}, "tree branching needs integers >= 1, got (2, 0)"),
        ({"branching": ()}, "tree branching needs integers >= 1, got ()"),
        ({"min_path_prob": 1.0}, "min_path_prob must be in [0, 1), got 1.0"),
        ({"min_path_prob": -0.1}, "min_path_prob must be in [0, 1), got -0.1"),
        ({"max_nodes": 0}, "max_nodes must be >= 1, got 0"),
    ],
)
def test_bad_settings_are_refused(model: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        TreeDraft(model, **kwargs)
    assert str(info.value) == message


def test_the_smallest_settings_are_accepted(model: Any) -> None:
    drafter = TreeDraft(model, branching=(1,), lookup=False, max_nodes=1, min_path_prob=0.0)
    proposal = drafter.propose([5, 6, 7], 3, 0.0, RNG)
    assert proposal.token_ids == _top(model, [5, 6, 7], 1) and proposal.parents == (-1,)
    with pytest.raises(ValueError, match="draft context must hold at least one token"):
        drafter.propose([], 2, 0.0, RNG)


def test_a_one_node_budget_keeps_the_drafts_first_choice_over_the_lookup(model: Any) -> None:
    context = [5, 6, 7, 8, 5, 6, 7]  # the lookup chain proposes 8
    (first,) = _top(model, context, 1)
    assert first != 8
    drafter = TreeDraft(model, branching=(2, 2), lookup=True, max_nodes=1)
    proposal = drafter.propose(context, 4, 0.0, RNG)
    assert (proposal.token_ids, proposal.parents) == ((first,), (-1,))
    two = TreeDraft(model, branching=(2, 2), lookup=True, max_nodes=2).propose(context, 4, 0.0, RNG)
    assert (two.token_ids, two.parents) == ((first, 8), (-1, -1))


def test_one_deep_trees_back_to_back_keep_the_cache_committed(model: Any) -> None:
    """γ = 1 drafts without a tree pass: nothing to crop, and the cache must still hold
    the whole context for the next proposal."""
    drafter = TreeDraft(model, branching=(3,), lookup=False)
    context = [5, 6, 7, 8]
    for step in range(3):
        proposal = drafter.propose(context, 1, 0.0, RNG)
        assert proposal.token_ids == _top(model, context, 3), step
        assert proposal.parents == (-1, -1, -1)
        assert drafter._cache is not None
        assert drafter._cache.get_seq_length() == len(context)
        context = [*context, proposal.token_ids[1]]


def test_deeper_trees_are_cropped_from_the_cache(model: Any) -> None:
    drafter = TreeDraft(model, branching=(2, 2), lookup=True)
    context = [5, 6, 7, 5, 6]
    proposal = drafter.propose(context, 3, 0.0, RNG)
    assert len(proposal.token_ids) > 3
    assert drafter._cache is not None
    assert drafter._cache.get_seq_length() == len(context)
    # beyond the branching tuple each branch node has one child: 2, 4, then 4 more
    plain = TreeDraft(model, branching=(2, 2), lookup=False, max_nodes=64)
    tree = plain.propose(context, 3, 0.0, RNG)
    assert tree.parents is not None
    depth = [0] * len(tree.parents)
    for i, parent in enumerate(tree.parents):
        depth[i] = 1 if parent < 0 else depth[parent] + 1
    assert [depth.count(d) for d in (1, 2, 3)] == [2, 4, 4]
