"""The draft/target pair ``edgespec trace`` (and ``calibrate``) runs: its models resolved
without loading them (:func:`model_specs`), loaded (:func:`load_pair`), and a pair whose
vocabularies differ refused once both are loaded and before any work (``edgespec trace``;
``edgespec calibrate`` before its profile step): every token id one proposes or takes must
be the other's too. Before, ``trace`` ended in a traceback (``RequestError:
INVALID_ARGUMENT: draft token 0 (id 82) is outside the vocabulary [0, 64)``) and
``calibrate`` profiled the pair first, then failed in its drafter processes."""

from __future__ import annotations

from typing import Any

from edgespec.errors import UserInputError
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


def check_pair_vocab(draft_name: str, draft_model: Any, target_vocab: int) -> None:
    """A :class:`UserInputError` naming ``--draft`` and both sizes when the loaded draft
    ``draft_model`` (``None``: prompt lookup, which proposes the prompt's own ids) takes
    fewer token ids than the target's ``target_vocab`` (the runtime's own check,
    :func:`~edgespec.runtime.edge.draft_backends.check_draft_vocab`: the target's first
    token outside them would crash the draft) or proposes more (ids the target does not
    have: its first such draft token fails verification)."""
    from edgespec.config import ConfigError
    from edgespec.runtime.edge.draft_backends import check_draft_vocab, draft_input_vocab

    if draft_model is None:
        return
    try:
        check_draft_vocab(draft_name, draft_model, target_vocab)
    except ConfigError as exc:
        raise UserInputError(f"--draft {exc.message}") from None
    num_ids = draft_input_vocab(draft_model)
    if num_ids > target_vocab:
        raise UserInputError(
            f"--draft {draft_name} has a vocabulary of {num_ids} tokens, the target "
            f"{target_vocab}: it would draft ids the target does not have (share the "
            "target's tokenizer)"
        )
