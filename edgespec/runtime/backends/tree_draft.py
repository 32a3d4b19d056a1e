"""A drafter that proposes a token tree (:mod:`edgespec.core.tree`): the neural draft's
top-b_d tokens under every node of depth d − 1 on its branches, plus one prompt-lookup
chain (a lookup token where the context repeats, the draft's argmax otherwise, as
:class:`~edgespec.runtime.backends.hybrid_draft.HybridDraft` drafts). A lookup token that is
also one of the draft's candidates is one node, not two.

Drafting costs the same number of draft passes as a chain of the same depth (the
proposal's ``num_passes``, one more where pruning left a depth without nodes): one pass over
the uncached context gives the root's candidates, then one pass per depth forwards all
nodes of that depth together, each attending to the context and its own ancestors (an
explicit 4-D mask over the draft's KV cache). The tree's entries are cropped from the cache
afterwards, so the cache only ever holds committed tokens. The tree is the same whether the
request samples or not: its nodes are proposed for certain, verified greedily
(:func:`edgespec.core.speculative.greedy_verify_tree`) or, sampling, each candidate in turn
against the target's row (:func:`edgespec.core.speculative.stochastic_verify_tree`). A request's
bias and penalties are made on every node's row after its own path
(:mod:`~edgespec.runtime.backends.draft_shaping`) before the candidates are chosen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from edgespec.runtime.backends.base import DraftProposal
from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.backends.hybrid_draft import HybridDraft


@dataclass(slots=True)
class _Node:
    token: int
    parent: int  # -1 = the root (the newest committed token)
    branch: bool  # expand with the draft's top-b candidates
    chain: bool  # expand with the lookup chain's next token
    ancestors: tuple[int, ...]  # node indices from depth 1 to this node
    path_prob: float = 1.0  # the draft's probability of the path to this node


class TreeDraft(HybridDraft):
    """Token-tree drafter over a HF-style causal LM (trimmed-vocabulary drafts included).

    ``branching[d - 1]`` candidates are drafted under each draft-branch node of depth
    d − 1 (1 beyond the tuple's length); ``lookup`` adds the prompt-lookup chain. With
    ``branching`` all ones and no lookup the tree is the draft's greedy chain. Every
    verified token costs target compute, so two limits prune the tree: a candidate whose
    path probability under the draft (the product of the draft's probabilities along it)
    is below ``min_path_prob`` is left out, and a tree holds at most ``max_nodes`` tokens
    (keep it within the server's ``max_draft_tokens``): the draft's first choice at the
    root comes first, then the lookup chain, then the other candidates of each depth by
    path probability.
    """

    def __init__(
        self,
        model: Any,
        branching: Sequence[int] = (2, 2, 1, 1),
        lookup: bool = True,
        max_ngram: int = 8,
        min_ngram: int = 2,
        min_path_prob: float = 0.0,
        max_nodes: int = 24,
    ) -> None:
        super().__init__(model, max_ngram, min_ngram)
        if not branching or min(branching) < 1:
            raise ValueError(f"tree branching needs integers >= 1, got {tuple(branching)}")
        if not 0.0 <= min_path_prob < 1.0:
            raise ValueError(f"min_path_prob must be in [0, 1), got {min_path_prob}")
        if max_nodes < 1:
            raise ValueError(f"max_nodes must be >= 1, got {max_nodes}")
        self.branching = tuple(int(b) for b in branching)
        self.lookup = lookup
        self.min_path_prob = min_path_prob
        self.max_nodes = max_nodes

    @torch.inference_mode()
    def propose(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        if not context:
            raise ValueError("draft context must hold at least one token")
        root_row = self._step(self._sync(context))
        self._keep_rows([root_row])
        base = len(self._cached)
        nodes: list[_Node] = []
        frontier: list[tuple[int, torch.Tensor]] = [(-1, self._shaped(root_row, context, shaping))]
        num_passes = 1  # the root's
        try:
            for depth in range(1, gamma + 1):
                first_new = len(nodes)
                self._expand(nodes, frontier, depth, gamma, context)
                new = list(range(first_new, len(nodes)))
                if depth == gamma or not new:
                    break
                rows = self._forward_nodes(nodes, new, base, depth)
                num_passes += 1
                frontier = [
                    (i, self._shaped(row, [*context, *(nodes[a].token for a in nodes[i].ancestors)],
                                     shaping))
                    for i, row in zip(new, rows, strict=True)
                ]  # fmt: skip
        finally:
            extra = self._cache.get_seq_length() - base if self._cache is not None else 0
            if extra > 0:
                self._cache.crop(-extra)  # negative: tokens to drop
        return DraftProposal(
            token_ids=tuple(n.token for n in nodes),
            probs=None,
            parents=tuple(n.parent for n in nodes),
            num_passes=num_passes,
        )

    def _shaped(
        self, row: torch.Tensor, seq: Sequence[int], shaping: DraftShaping | None
    ) -> torch.Tensor:
        """``row`` (the draft's logits after ``seq``) biased and penalized as ``shaping``
        asks: the candidates and the chain's argmax are then the shaped row's."""
        if shaping is None or not shaping.moves_logits:
            return row
        shaped = shaping.logits(row.cpu().numpy(), seq, self._columns(row))
        return torch.from_numpy(shaped).to(row.device)

    def _candidates(
        self, nodes: list[_Node], frontier: list[tuple[int, torch.Tensor]], depth: int
    ) -> list[tuple[float, int, int]]:
        """(path probability, frontier index, target id) of every draft candidate at
        ``depth`` that passes ``min_path_prob``, in frontier then rank order."""
        width = self.branching[depth - 1] if depth <= len(self.branching) else 1
        out = []
        for slot, (parent, row) in enumerate(frontier):
            if parent >= 0 and not nodes[parent].branch:
                continue
            prior = 1.0 if parent < 0 else nodes[parent].path_prob
            top = torch.topk(torch.softmax(row, dim=-1), min(width, row.shape[0]))
            for rank, (p, index) in enumerate(
                zip(top.values.tolist(), top.indices.tolist(), strict=True)
            ):
                if prior * p < self.min_path_prob and not (parent < 0 and rank == 0):
                    break  # candidates come in falling probability
                out.append((prior * p, slot, self._to_target(int(index))))
        return out

    def _expand(
        self,
        nodes: list[_Node],
        frontier: list[tuple[int, torch.Tensor]],
        depth: int,
        gamma: int,
        context: Sequence[int],
    ) -> None:
        """Append the nodes of ``depth`` (children of the frontier), within the budget."""
        candidates = self._candidates(nodes, frontier, depth)
        chain_slot = next(
            (
                slot
                for slot, (parent, _) in enumerate(frontier)
                if self.lookup and (parent < 0 or nodes[parent].chain)
            ),
            None,
        )
        chain_reserve = gamma - depth + 1 if chain_slot is not None else 0
        room = max(self.max_nodes - len(nodes) - chain_reserve, 1 if depth == 1 else 0)
        by_prob = sorted(range(len(candidates)), key=lambda i: -candidates[i][0])
        kept = sorted(by_prob[:room])  # back in frontier then rank order
        for slot, (parent, row) in enumerate(frontier):
            ancestors = () if parent < 0 else nodes[parent].ancestors
            kids: dict[int, int] = {}
            for i in kept:
                prob, at, token = candidates[i]
                if at == slot and len(nodes) < self.max_nodes:
                    kids[token] = len(nodes)
                    nodes.append(_Node(token, parent, True, False, (*ancestors, len(nodes)), prob))
            if slot != chain_slot:
                continue
            token = self._lookup_or_argmax([*context, *(nodes[i].token for i in ancestors)], row)
            if token in kids:
                nodes[kids[token]].chain = True
            elif len(nodes) < self.max_nodes:
                nodes.append(_Node(token, parent, False, True, (*ancestors, len(nodes))))

    def _forward_nodes(
        self, nodes: list[_Node], new: list[int], base: int, depth: int
    ) -> list[torch.Tensor]:
        """One draft pass over the nodes ``new`` (all of depth ``depth``, appended to the
        cache after the earlier nodes, which sit at cache column ``base + index``)."""
        total = base + new[-1] + 1
        allowed = np.zeros((len(new), total), dtype=np.bool_)
        allowed[:, :base] = True
        for row, index in enumerate(new):
            allowed[row, [base + a for a in nodes[index].ancestors]] = True
        dtype, device = next(self._model.parameters()).dtype, self._device
        bias = torch.zeros(allowed.shape, dtype=dtype)
        bias.masked_fill_(torch.from_numpy(~allowed), torch.finfo(dtype).min)
        ids = torch.tensor([[nodes[i].token for i in new]], dtype=torch.long, device=device)
        positions = torch.full((1, len(new)), base - 1 + depth, dtype=torch.long, device=device)
        kwargs = {"attention_mask": bias[None, None].to(device), "position_ids": positions}
        if self._trimmed:
            logits, self._cache = self._model.trimmed_forward(
                ids, past_key_values=self._cache, use_cache=True, **kwargs
            )
        else:
            out = self._model(input_ids=ids, past_key_values=self._cache, use_cache=True, **kwargs)
            logits, self._cache = out.logits, out.past_key_values
        return list(logits[0].float())
