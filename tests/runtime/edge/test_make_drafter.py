"""``make_drafter`` (:mod:`edgespec.runtime.edge.draft_backends`) picks the draft backend
from the draft's name and model: n-gram lookup, a plain or trimmed model, its hybrid with
lookup, a feature draft (chains only) and a token tree."""

from __future__ import annotations

import pytest


def test_make_drafter_picks_the_backend() -> None:
    from edgespec.runtime.backends.hybrid_draft import HybridDraft
    from edgespec.runtime.backends.ngram import NgramDrafter
    from edgespec.runtime.backends.transformers_draft import TransformersDraft
    from edgespec.runtime.edge.draft_backends import make_drafter
    from tests.models.tiny import tiny_draft, tiny_target

    trimmed, plain = tiny_draft([3, 4, 5]), tiny_target()
    assert type(make_drafter("ngram", None, 48)) is NgramDrafter
    assert type(make_drafter("d", trimmed, 48)) is TransformersDraft
    assert type(make_drafter("d", plain, 48)) is TransformersDraft
    assert type(make_drafter("d", plain, 48, lookup=True)) is HybridDraft
    from edgespec.runtime.backends.feature_draft import FeatureDraft
    from tests.models.test_feature_draft import _net

    assert type(make_drafter("d", _net(), 48)) is FeatureDraft
    from edgespec.config import ConfigError
    from edgespec.runtime.backends.tree_draft import TreeDraft

    tree = make_drafter("d", trimmed, 48, lookup=True, tree="3,1", tree_min_prob=0.1)
    assert type(tree) is TreeDraft and tree.branching == (3, 1) and tree.lookup
    assert tree.min_path_prob == 0.1
    with pytest.raises(ConfigError, match="feature draft, which drafts chains only"):
        make_drafter("d", _net(), 48, tree="2")
