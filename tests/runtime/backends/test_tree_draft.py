"""Token-tree drafting: exact trees against an uncached reference, pruning and node budgets,
lossless output (the verification side: test_tree_serving.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")

import torch

from edgespec.core.tree import parse_branching, path_to
from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.ngram import suffix_match_next
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.backends.tree_draft import TreeDraft
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.inprocess import speculative_generate, target_greedy_decode
from tests.models.tiny import tiny_draft

RNG = np.random.default_rng(0)


def sharp_flat_llama() -> Any:
    """Flat logits and sharp attention: an error in a tree node's position or mask
    reorders its candidates (a random tiny model barely depends on positions otherwise)."""
    model = tiny_llama(seed=5, logit_scale=1.0)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(12.0)
            layer.self_attn.k_proj.weight.mul_(12.0)
    return model


def _draft_row(model: Any, seq: Sequence[int]) -> torch.Tensor:
    """The draft's next-token logits after ``seq`` by a fresh, uncached forward."""
    with torch.inference_mode():
        ids = torch.tensor([list(seq)])
        logits: torch.Tensor
        if hasattr(model, "trimmed_forward"):
            logits = model.trimmed_forward(ids, use_cache=False)[0][0, -1]
        else:
            logits = model(input_ids=ids).logits[0, -1]
        return logits


def _to_target(model: Any, index: int) -> int:
    if hasattr(model, "to_target_ids"):
        return int(model.to_target_ids(torch.tensor(index)))
    return index


def reference_tree(
    model: Any,
    context: Sequence[int],
    branching: Sequence[int],
    depth: int,
    lookup: bool,
    min_prob: float = 0.0,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The tree TreeDraft should draft, built with one uncached forward per node."""
    tokens: list[int] = []
    parents: list[int] = []
    flags: list[tuple[bool, bool]] = []  # (branch, chain)
    path_probs: list[float] = []
    frontier = [-1]
    for d in range(1, depth + 1):
        first = len(tokens)
        for parent in frontier:
            path = [tokens[i] for i in path_to(parents, parent)] if parent >= 0 else []
            row = _draft_row(model, [*context, *path])
            branch, chain = (True, lookup) if parent < 0 else flags[parent]
            kids: dict[int, int] = {}
            if branch:
                width = branching[d - 1] if d <= len(branching) else 1
                probs = torch.softmax(row, -1)
                for rank, index in enumerate(torch.topk(row, width).indices.tolist()):
                    prob = (path_probs[parent] if parent >= 0 else 1.0) * float(probs[index])
                    if prob < min_prob and (parent >= 0 or rank > 0):
                        break
                    token = _to_target(model, index)
                    if token not in kids:
                        kids[token] = len(tokens)
                        tokens.append(token)
                        parents.append(parent)
                        flags.append((True, False))
                        path_probs.append(prob)
            if chain:
                found = suffix_match_next([*context, *path], 8, 2)
                token = found if found is not None else _to_target(model, int(row.argmax()))
                if token in kids:
                    flags[kids[token]] = (flags[kids[token]][0], True)
                else:
                    tokens.append(token)
                    parents.append(parent)
                    flags.append((False, True))
                    path_probs.append(1.0)
        frontier = list(range(first, len(tokens)))
    return tuple(tokens), tuple(parents)


@pytest.mark.parametrize("lookup", [False, True])
@pytest.mark.parametrize("kind", ["llama", "flat", "trimmed"])
@pytest.mark.parametrize("min_prob", [0.0, 0.02])
def test_tree_matches_uncached_reference(
    draft_model: Any, kind: str, lookup: bool, min_prob: float
) -> None:
    models = {"llama": draft_model, "trimmed": tiny_draft(kept=range(3, 40))}
    model = models[kind] if kind in models else sharp_flat_llama()
    drafter = TreeDraft(model, (3, 2, 1), lookup, min_path_prob=min_prob, max_nodes=64)
    context = [5, 6, 7, 8, 5, 6, 7, 9, 10, 5, 6]  # repeats, so lookup finds matches
    for step in range(3):  # the cache carries over between calls
        proposal = drafter.propose(context, 4, 0.0, RNG)
        expected = reference_tree(model, context, (3, 2, 1), 4, lookup, min_prob)
        assert (proposal.token_ids, proposal.parents) == expected
        deepest = max(len(path_to(expected[1], n)) for n in range(len(expected[1])))
        # one draft pass per depth down to γ, and one that found every candidate pruned
        assert proposal.num_passes == (deepest if deepest == 4 else deepest + 1)
        assert len(proposal.token_ids) <= 3 + 6 + 6 + 6 + (4 if lookup else 0)
        context = [*context, proposal.token_ids[0], 11 + step]


def test_all_ones_without_lookup_is_the_greedy_chain(draft_model: Any) -> None:
    context = [3, 4, 5, 6]
    tree = TreeDraft(draft_model, branching=(1,), lookup=False).propose(context, 4, 0.0, RNG)
    chain = TransformersDraft(draft_model).propose(context, 4, 0.0, RNG)
    assert tree.token_ids == chain.token_ids
    assert tree.parents == (-1, 0, 1, 2)


@pytest.mark.parametrize("branching", [(2, 2, 1, 1), (3, 1)])
def test_tree_decoding_is_lossless(
    target: TransformersTarget, draft_model: Any, branching: tuple[int, ...]
) -> None:
    drafter = TreeDraft(draft_model, branching=branching)
    chain_rounds = 0
    for prompt in ([1, 2, 3, 4, 5], [7, 7, 8, 9, 7, 7, 8], list(range(10, 30))):
        sampling = SamplingParams(max_new_tokens=24)
        result = speculative_generate(target, drafter, prompt, 4, sampling)
        assert result.output_token_ids == target_greedy_decode(target, prompt, 24)
        chain = speculative_generate(target, TransformersDraft(draft_model), prompt, 4, sampling)
        chain_rounds += len(chain.rounds)
        assert all(r.num_accepted <= 4 for r in result.rounds)
        assert any(r.num_drafted > 4 for r in result.rounds)  # trees really were sent
    assert chain_rounds > 0


def test_parse_branching() -> None:
    assert parse_branching("2,2,1,1") == (2, 2, 1, 1)
    with pytest.raises(ValueError, match="integers >= 1"):
        parse_branching("2,0")
    with pytest.raises(ValueError, match="comma-separated integers"):
        parse_branching("two")


def test_a_sampled_requests_tree_is_the_greedy_ones_with_no_draft_probs() -> None:
    """Sampling, the tree is drafted as for greedy decoding: its nodes are proposed for
    certain (the server tries each in turn against the target's row), so no q is sent."""
    model = tiny_draft(kept=range(3, 9))
    greedy = TreeDraft(model).propose([1, 2, 1], 3, 0.0, RNG)
    sampled = TreeDraft(model).propose([1, 2, 1], 3, 0.7, np.random.default_rng(5))
    assert (sampled.token_ids, sampled.parents) == (greedy.token_ids, greedy.parents)
    assert sampled.probs is None and len(set(greedy.parents or ())) < len(greedy.token_ids)


def test_min_path_prob_prunes_unlikely_candidates() -> None:
    model = sharp_flat_llama()  # flat: every candidate's probability is about 1/64
    context = [5, 6, 7, 8]
    full = TreeDraft(model, branching=(3, 2, 1), lookup=False).propose(context, 3, 0.0, RNG)
    assert (len(full.token_ids), full.num_passes) == (3 + 6 + 6, 3)
    pruned = TreeDraft(model, (3, 2, 1), lookup=False, min_path_prob=0.5)
    only = pruned.propose(context, 3, 0.0, RNG)
    assert only.parents == (-1,) and only.token_ids == full.token_ids[:1]  # the first choice
    assert only.num_passes == 2  # the root's pass gave it, the next pruned all below it
    with pytest.raises(ValueError, match="min_path_prob must be in"):
        TreeDraft(model, (2,), min_path_prob=1.0)


def _paths(tokens: Sequence[int], parents: Sequence[int]) -> set[tuple[int, ...]]:
    return {tuple(tokens[i] for i in path_to(parents, n)) for n in range(len(tokens))}


@pytest.mark.parametrize("budget", [1, 5, 9, 16])
def test_max_nodes_caps_the_tree_and_keeps_the_chain(draft_model: Any, budget: int) -> None:
    from edgespec.runtime.backends.hybrid_draft import HybridDraft

    context = [5, 6, 7, 8, 5, 6, 7, 9, 10, 5, 6]
    full = TreeDraft(draft_model, (3, 3, 2, 1), max_nodes=64).propose(context, 4, 0.0, RNG)
    capped = TreeDraft(draft_model, (3, 3, 2, 1), max_nodes=budget).propose(context, 4, 0.0, RNG)
    assert len(full.token_ids) > 16
    assert len(capped.token_ids) == budget  # the full tree has more than any budget here
    assert capped.parents is not None and full.parents is not None
    assert _paths(capped.token_ids, capped.parents) <= _paths(full.token_ids, full.parents)
    chain = HybridDraft(draft_model).propose(context, 4, 0.0, RNG).token_ids
    if budget >= 5:  # the draft's first choice, then the lookup chain, come first
        assert chain in _paths(capped.token_ids, capped.parents)
        first = TreeDraft(draft_model, (1,), lookup=False).propose(context, 1, 0.0, RNG)
        assert first.token_ids[0] in capped.token_ids[:2]


def test_max_nodes_keeps_the_most_probable_candidates() -> None:
    """Within a depth, no dropped candidate (under a kept parent) is likelier than a kept
    one; path probabilities come from uncached forwards."""
    model = sharp_flat_llama()
    context = [5, 6, 7, 8, 9]
    drafter = TreeDraft(model, (3, 3, 2), lookup=False, max_nodes=8)
    capped = drafter.propose(context, 3, 0.0, RNG)
    assert capped.parents is not None and len(capped.token_ids) == 8
    kept_paths = _paths(capped.token_ids, capped.parents)
    prob: dict[tuple[int, ...], float] = {(): 1.0}
    widths = (3, 3, 2)
    for depth in (1, 2, 3):
        kept: list[float] = []
        dropped: list[float] = []
        for path in [p for p in kept_paths if len(p) == depth - 1] or [()]:
            row = torch.softmax(_draft_row(model, [*context, *path]), -1)
            for index in torch.topk(row, widths[depth - 1]).indices.tolist():
                child = (*path, index)
                prob[child] = prob[path] * float(row[index])
                (kept if child in kept_paths else dropped).append(prob[child])
        if kept and dropped:
            assert min(kept) >= max(dropped)
