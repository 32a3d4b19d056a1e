"""The draft/target pair ``edgespec trace`` (and ``calibrate``) runs: its models resolved
without loading them (:func:`model_specs`) and loaded (:func:`load_pair`); a pair whose
vocabularies differ is refused once both are loaded, before any work
(:func:`~edgespec.runtime.edge.draft_backends.check_pair_vocab`)."""

from __future__ import annotations

from typing import Any

from edgespec.learn.traces.checks import NGRAM
from edgespec.models.registry import ModelSpec, resolve_model


def model_specs(target: str, draft: str) -> tuple[ModelSpec, ModelSpec | None]:
    """``--target``'s and ``--draft``'s models (no draft model for prompt lookup), resolved
    without loading them: an unknown name, a missing path or a directory whose save was
    cut off is a one-line :class:`~edgespec.models.registry.ModelNotFoundError` before the
    target's slow load."""
    return resolve_model(target), None if draft == NGRAM else resolve_model(draft)


def load_pair(
    target_spec: ModelSpec, draft_spec: ModelSpec | None, placement: Any, verbose: bool
) -> tuple[Any, Any]:
    """The target (with its tokenizer) and the draft model (``None`` for prompt lookup) on
    ``placement``'s device and dtype."""
    from edgespec.models.loading import load_model

    device, dtype = placement.device, placement.dtype
    target = load_model(target_spec, dtype, require_tokenizer=True, verbose=verbose, device=device)
    if draft_spec is None:
        return target, None
    draft = load_model(draft_spec, dtype, target=target, verbose=verbose, device=device)
    return target, draft.model
