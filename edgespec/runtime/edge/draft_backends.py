"""The draft backend ``--draft NAME`` stands for: prompt lookup, a model, a hybrid of the
two, a token tree, or a feature draft (``edgespec draft``, ``edgespec serve --draft``)."""

from __future__ import annotations

from typing import Any


def make_drafter(
    name: str,
    model: Any,
    vocab_size: int,
    lookup: bool = False,
    tree: str | None = None,
    tree_min_prob: float = 0.0,
    tree_max_nodes: int = 24,
) -> Any:
    """A draft backend: prompt lookup for 'ngram'; for a model, a token tree when ``tree``
    gives its branching, else lookup first when ``lookup``, else the model alone
    (trimmed-vocabulary drafts through their own head)."""
    from edgespec.config import ConfigError
    from edgespec.core.tree import parse_branching
    from edgespec.runtime.backends.ngram import NgramDrafter
    from edgespec.runtime.backends.transformers_draft import HybridDraft, TransformersDraft
    from edgespec.runtime.backends.tree_draft import TreeDraft

    if name == "ngram":
        return NgramDrafter(vocab_size=vocab_size)
    if hasattr(model, "unrolled"):  # a feature draft: the server returns target features
        from edgespec.runtime.backends.feature_draft import FeatureDraft

        if tree is not None:
            raise ConfigError("tree", f"{name} is a feature draft, which drafts chains only")
        return FeatureDraft(model, lookup=lookup)
    if tree is not None:
        branching = parse_branching(tree)
        return TreeDraft(
            model, branching, lookup, min_path_prob=tree_min_prob, max_nodes=tree_max_nodes
        )
    if lookup:
        return HybridDraft(model)
    return TransformersDraft(model)
