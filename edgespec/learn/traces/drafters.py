"""The drafter ``edgespec trace`` runs: the loaded draft model (causal LM or feature
draft) or prompt lookup, as a chain, a token tree or combined with lookup, and the name
the records give it (``gemma3-270m-draft+tree(2,2,1,1)+lookup``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgespec.errors import UserInputError


@dataclass(frozen=True, slots=True)
class DraftChoice:
    """The draft flags: ``--draft`` (name), ``--lookup``, ``--tree`` (branching text or
    None), ``--tree-min-prob``, ``--tree-max-nodes``."""

    name: str
    lookup: bool = False
    tree: str | None = None
    tree_min_prob: float = 0.0
    tree_max_nodes: int = 24


def drafter_for(
    choice: DraftChoice, draft_model: Any, stops: bool, lookup_vocab_size: int | None = None
) -> tuple[Any, Any, str]:
    """(drafter, the causal-LM draft for assisted generation or None, the draft's name in
    the records) for the loaded ``draft_model`` (None: prompt lookup alone); ``stops``: a
    stop predictor will cut its windows; ``lookup_vocab_size``: the target's vocabulary,
    over which prompt lookup alone gives its (one-hot) distributions, as sampling needs.
    A combination the draft cannot do is a UserInputError naming the flag."""
    from edgespec.core.tree import parse_branching
    from edgespec.models.feature_draft import FeatureDraftNet
    from edgespec.runtime.backends.base import stopping_drafter
    from edgespec.runtime.backends.feature_draft import FeatureDraft
    from edgespec.runtime.backends.hybrid_draft import HybridDraft
    from edgespec.runtime.backends.ngram import NgramDrafter
    from edgespec.runtime.backends.transformers_draft import TransformersDraft
    from edgespec.runtime.backends.tree_draft import TreeDraft

    drafter: Any = NgramDrafter(max_ngram=3, vocab_size=lookup_vocab_size)
    name, lookup = choice.name, "+lookup" if choice.lookup else ""
    if isinstance(draft_model, FeatureDraftNet):  # transformers' assisted generation cannot
        if choice.tree is not None:
            raise UserInputError("--tree needs a causal-LM draft (feature drafts: chains)")
        drafter, draft_model = FeatureDraft(draft_model, lookup=choice.lookup), None
        name += lookup
    elif draft_model is not None and choice.tree is not None:
        drafter = TreeDraft(
            draft_model,
            parse_branching(choice.tree),
            choice.lookup,
            min_path_prob=choice.tree_min_prob,
            max_nodes=choice.tree_max_nodes,
        )
        cut = f",p>={choice.tree_min_prob})" if choice.tree_min_prob else ")"
        name += f"+tree({choice.tree}{cut}{lookup}"
    elif draft_model is not None and choice.lookup:
        drafter, name = HybridDraft(draft_model), f"{choice.name}+lookup"
    elif draft_model is not None:
        drafter = TransformersDraft(draft_model)
    if stops:
        try:
            stopping_drafter(drafter)
        except ValueError as exc:
            raise UserInputError(f"--stop-predictor: {exc}") from None
    return drafter, draft_model, name
