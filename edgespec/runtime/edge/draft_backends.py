"""The draft backend ``--draft NAME`` stands for: prompt lookup, a model, a hybrid of the
two, a token tree, or a feature draft (``edgespec draft``, ``edgespec serve --draft``); with
``edgespec draft --backend llamacpp``, a GGUF model on llama.cpp (a chain, lookup optional)."""

from __future__ import annotations

from typing import Any

from edgespec.arguments import DevicePlacement
from edgespec.errors import UserInputError

DRAFT_BACKENDS = ("transformers", "llamacpp")


def load_draft_model(
    name: str,
    backend: str,
    verbose: bool = False,
    placement: DevicePlacement | None = None,
    threads: int | None = None,
) -> Any:
    """What ``--draft NAME`` loads on ``backend``: ``None`` for prompt lookup; on
    transformers the model and its tokenizer (:func:`~edgespec.models.loading.load_model`,
    on ``placement``'s device and dtype; default: the CPU, float32);
    on llamacpp the GGUF's context settings, on ``threads`` (``None``: llama.cpp's default;
    each drafter makes its own context, grown as its sessions need:
    :mod:`~edgespec.runtime.backends.llamacpp_draft`; the GGUF is loaded once here all the
    same: ``LlamaCppDraftModel.loaded``), no tokenizer (the draft command falls back to the
    server's target's)."""
    if name == "ngram":
        return None
    if backend == "llamacpp":
        from edgespec.models.registry import model_file
        from edgespec.runtime.backends.llamacpp_context import LlamaCppSettings
        from edgespec.runtime.backends.llamacpp_draft import (
            DRAFT_CONTEXT_TOKENS,
            LlamaCppDraftModel,
        )

        settings = LlamaCppSettings(
            model_file(name), sequences=1, context_tokens=DRAFT_CONTEXT_TOKENS, threads=threads
        )
        return LlamaCppDraftModel.loaded(settings)
    from edgespec.models.loading import load_model

    where = placement or DevicePlacement()
    return load_model(name, where.dtype, verbose=verbose, device=where.device)


def draft_input_vocab(model: Any) -> int:
    """How many token ids the draft ``model`` takes in (any id below it; one above it would
    index past its embeddings): a trimmed draft every id of its config's vocabulary, the
    target's (its kept-token map sends the ids it does not keep to its "other" slot, though
    its head outputs only the kept ones); a feature draft its target's; a llama.cpp draft
    its GGUF's vocabulary (read from a context made and freed now); else the embedding
    rows."""
    from edgespec.runtime.backends.llamacpp_draft import LlamaCppDraftModel

    if isinstance(model, LlamaCppDraftModel):
        from edgespec.runtime.backends.llamacpp_context import LlamaContext

        context = LlamaContext(model.settings)
        try:
            return int(context.vocab_size)
        finally:
            context.close()
    if hasattr(model, "unrolled"):  # a feature draft
        return int(model.config.target_vocab_size)
    if hasattr(model, "trimmed_forward"):  # TrimmedVocabDraft: maps in any target id
        return int(model.config.vocab_size)
    return int(model.get_input_embeddings().num_embeddings)


def draft_vocab_problem(
    name: str, num_ids: int, target_vocab: int, target: str = "the server's target"
) -> str | None:
    """Why a draft taking ``num_ids`` token ids does not pair with a target of
    ``target_vocab`` (``None``: it does): fewer (the target's first token outside them
    would crash the draft mid-output) or more (its first draft token outside the target's
    fails the round, every round). ``target``: how the wider case names the target."""
    if num_ids < target_vocab:
        return (f"{name} has a vocabulary of {num_ids} tokens, the server's target "
                f"{target_vocab}: the draft must take every target token id (share the "
                "target's tokenizer)")  # fmt: skip
    if num_ids > target_vocab:
        return (f"{name} has a vocabulary of {num_ids} tokens, {target} {target_vocab}: it "
                "would draft ids the target does not have (share the target's "
                "tokenizer)")  # fmt: skip
    return None


def check_draft_vocab(name: str, model: Any, target_vocab: int) -> None:
    """A :class:`~edgespec.config.ConfigError` at ``draft`` when the draft ``model``
    (``None``: prompt lookup, which takes any id) does not pair with the server's target
    (:func:`draft_vocab_problem` of :func:`draft_input_vocab`: ``edgespec draft``,
    ``edgespec drafting-server``, and ``edgespec serve --draft``, which names the flag)."""
    from edgespec.config import ConfigError

    if model is not None and (
        problem := draft_vocab_problem(name, draft_input_vocab(model), target_vocab)
    ):
        raise ConfigError("draft", problem)


def check_pair_vocab(draft_name: str, draft_model: Any, target_vocab: int) -> None:
    """A :class:`~edgespec.errors.UserInputError` naming ``--draft`` and both sizes when the
    loaded draft ``draft_model`` (``None``: prompt lookup, which proposes the prompt's own
    ids) does not pair with the target (:func:`draft_vocab_problem`). The learning
    commands that run a pair themselves (``trace``, ``calibrate``, ``profile``,
    ``train wisv-data``) call it once both are loaded, before any work: they had ended in a
    traceback, some after minutes of it."""
    if draft_model is None:
        return
    num_ids = draft_input_vocab(draft_model)
    if problem := draft_vocab_problem(draft_name, num_ids, target_vocab, "the target"):
        raise UserInputError(f"--draft {problem}")


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
    from edgespec.runtime.backends.ngram import NgramDrafter

    if name == "ngram":  # before the model backends' imports: prompt lookup needs no torch
        return NgramDrafter(vocab_size=vocab_size)
    from edgespec.config import ConfigError
    from edgespec.core.tree import parse_branching
    from edgespec.runtime.backends.hybrid_draft import HybridDraft
    from edgespec.runtime.backends.llamacpp_draft import LlamaCppDraft, LlamaCppDraftModel
    from edgespec.runtime.backends.transformers_draft import TransformersDraft
    from edgespec.runtime.backends.tree_draft import TreeDraft

    if isinstance(model, LlamaCppDraftModel):
        if tree is not None:
            raise ConfigError("tree", "a llama.cpp draft drafts chains only (drop --tree)")
        return LlamaCppDraft(model.settings, vocab_size, lookup)
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
