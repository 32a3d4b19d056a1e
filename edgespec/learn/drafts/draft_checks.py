"""Settings of `edgespec train draft` that would fail only after its generation stage (up to
``--gen-minutes``), checked before the target loads: the ``--datasets`` list, a new
draft's shape against ``--heads``, ``--kept-tokens`` and the target's hidden size, and the
target's sizes, read from its ``config.json`` without its weights (:class:`TargetShape`).
Also ``--out`` apart from the shard folders (:func:`check_out_apart`). Each refusal is a
one-line :class:`~edgespec.errors.UserInputError` naming the flags."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.datasets.prompts import DATASETS, HELD_OUT
from edgespec.errors import UserInputError
from edgespec.models.gemma_cache import gemma_directory, needs_conversion
from edgespec.models.registry import ModelSource, model_identity, resolve_model

MAX_CONFIG_BYTES = 1 << 20
"""A target's ``config.json`` read for its sizes: at most this much (Gemma 3's is 2 kB)."""


@dataclass(frozen=True, slots=True)
class TargetShape:
    """The target a run distils from: ``name`` (a known model's name, else its directory
    or file, resolved to an absolute path) and its vocabulary and hidden sizes."""

    name: str
    vocab_size: int
    hidden_size: int


def training_datasets(text: str) -> tuple[str, ...]:
    """The ``--datasets`` list (comma-separated): one or more training datasets, each once."""
    known = ", ".join(DATASETS)
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise UserInputError(f"--datasets {text!r} names no dataset; known datasets are {known}")
    for index, name in enumerate(names):
        if name in HELD_OUT:
            raise UserInputError(
                f"--datasets: {name!r} is held out from training (a test split only); "
                f"known datasets are {known}"
            )
        if name not in DATASETS:
            raise UserInputError(
                f"--datasets: no dataset named {name!r}; known datasets are {known}"
            )
        if name in names[:index]:
            raise UserInputError(f"--datasets names {name!r} twice")
    return names


def check_heads(hidden_size: int, num_heads: int) -> None:
    """A new draft's ``--hidden-size`` splits into ``--heads`` heads of an even size (the
    rotary position embedding turns pairs of dimensions)."""
    if hidden_size % num_heads:
        raise UserInputError(
            f"--hidden-size {hidden_size} is not a multiple of --heads {num_heads} "
            "(each head takes hidden-size / heads dimensions)"
        )
    if (hidden_size // num_heads) % 2:
        raise UserInputError(
            f"--hidden-size {hidden_size} / --heads {num_heads} = {hidden_size // num_heads} "
            "dimensions per head: it must be even (rotary position embeddings turn pairs)"
        )


def check_fits_target(hidden_size: int, num_kept_tokens: int, target_hidden_size: int) -> None:
    """A new draft's ``--hidden-size`` at most min(``--kept-tokens``, the target's hidden
    size): its embeddings start as the kept rows of the target's projected on their top
    principal directions, of which there are no more than that."""
    limit = min(num_kept_tokens, target_hidden_size)
    if hidden_size > limit:
        raise UserInputError(
            f"--hidden-size {hidden_size} is larger than min(--kept-tokens {num_kept_tokens}, "
            f"the target's hidden size {target_hidden_size}) = {limit}: a new draft's "
            "embeddings are the target's projected on at most that many directions"
        )


def saved_target_shape(target: str) -> TargetShape | None:
    """The ``--target``'s sizes from its ``config.json``, its weights not loaded; ``None``
    where there is none to read (a ``.gguf`` file, ``gemma3-270m`` before its first
    conversion) or it gives no whole-number sizes: then the loaded model tells
    (:func:`loaded_target_shape`). An unknown name or a broken directory is the
    registry's one-line error."""
    config = _saved_config(target)
    if config is None:
        return None
    vocab_size, hidden_size = config.get("vocab_size"), config.get("hidden_size")
    if not (type(vocab_size) is int and type(hidden_size) is int):
        return None
    return TargetShape(model_identity(target), vocab_size, hidden_size)


def saved_context_tokens(target: str) -> int | None:
    """The ``--target``'s context length (``max_position_embeddings``) from its
    ``config.json``, its weights not loaded; ``None`` where it gives none (as
    :func:`saved_target_shape`)."""
    config = _saved_config(target)
    tokens = None if config is None else config.get("max_position_embeddings")
    return tokens if type(tokens) is int and tokens > 0 else None


def _saved_config(target: str) -> dict[str, Any] | None:
    """The ``--target``'s ``config.json`` (a multimodal model's text part), its weights
    not loaded; ``None`` where there is none to read or it is no JSON object of at most
    :data:`MAX_CONFIG_BYTES`."""
    spec = resolve_model(target)
    if spec.source is ModelSource.GGUF_FILE or needs_conversion(target):
        return None
    directory = gemma_directory() if spec.path is None else spec.path
    with (directory / "config.json").open("rb") as config_file:
        text = config_file.read(MAX_CONFIG_BYTES + 1)
    try:
        config: Any = json.loads(text) if len(text) <= MAX_CONFIG_BYTES else None
    except (json.JSONDecodeError, UnicodeDecodeError):  # the load names what is wrong
        return None
    if isinstance(config, dict) and isinstance(config.get("text_config"), dict):
        config = config["text_config"]  # a multimodal model's text part
    return config if isinstance(config, dict) else None


TEXT_DEFAULTS = {"conversations": 2000, "text_minutes": 15.0, "text_max_tokens": 256}
"""The text labelling's flags' defaults, taken with ``--text-data-dir`` (:func:`text_flags`)."""


def text_flags(args: Any) -> dict[str, Any]:
    """``--conversations``, ``--text-minutes`` and ``--text-max-tokens`` (their defaults
    where not given); one given without ``--text-data-dir``, which labels nothing without
    it, is a :class:`UserInputError` (it was taken and did nothing)."""
    given = [name for name in TEXT_DEFAULTS if getattr(args, name) is not None]
    if given and args.text_data_dir is None:
        flag = "--" + given[0].replace("_", "-")
        only = "sets the text labelling, which only --text-data-dir runs"
        raise UserInputError(f"{flag} {only}: give --text-data-dir DIR too, or leave {flag} out")
    return {name: default if getattr(args, name) is None else getattr(args, name)
            for name, default in TEXT_DEFAULTS.items()}  # fmt: skip


GENERATION_ONLY = ("--sharegpt-limit", "--gen-minutes", "--batch-size", "--max-prompt-tokens",
                   "--max-new-tokens", "--sample-temperature", "--fast-head")  # fmt: skip
"""``train draft``'s flags that only its generation stage reads."""


def check_skipped_generation(args: Any, number_defaults: Mapping[str, object]) -> None:
    """With ``--skip-generate``, a :data:`GENERATION_ONLY` flag away from its default
    (``number_defaults`` for the numeric ones) is a :class:`UserInputError`: it was taken
    and generated nothing."""
    defaults = {**number_defaults, "--sample-temperature": 0.0, "--fast-head": False}
    for flag in GENERATION_ONLY:
        if getattr(args, flag[2:].replace("-", "_")) != defaults[flag]:
            skipped = "sets the generation, which --skip-generate skips"
            raise UserInputError(f"{flag} {skipped}: leave {flag} or --skip-generate out")


def check_distinct_data_dirs(data_dir: Path, train_data_dirs: Sequence[Path]) -> None:
    """Each shard folder once among ``--data-dir`` and the ``--train-data-dir`` (as
    resolved, so ``dd`` and ``dd/`` are one): a folder given again would be trained on
    twice, its sequences weighted double without a word."""
    seen = {data_dir.resolve(): "--data-dir"}
    for extra in train_data_dirs:
        if (first := seen.get(extra.resolve())) is not None:
            twice = "its shards would be trained on twice; give each folder once"
            raise UserInputError(f"--train-data-dir {extra} is {first}'s folder again: {twice}")
        seen[extra.resolve()] = "--train-data-dir"


def check_out_apart(out: Path, folders: Sequence[tuple[str, Path | None]]) -> None:
    """``--out`` must be a folder of its own: none of the run's shard or features
    ``folders`` (each with its flag), nor one that holds shards or features: a draft saved
    among them would leave a folder that no later run writes into
    (:func:`~edgespec.learn.drafts.shard_kinds.check_holds_no_model`)."""
    apart = "a draft is saved into a folder of its own, not among shards; give another --out"
    for flag, folder in folders:
        if folder is not None and folder.resolve() == out.resolve():
            raise UserInputError(f"--out {str(out)!r} is also the {flag}: {apart}")
    held = sorted(p for g in ("shard_*", "features_*") for p in out.glob(g)) if out.is_dir() else []
    if held:
        raise UserInputError(f"--out {str(out)!r} holds shards ({held[0].name}): {apart}")


def loaded_target_shape(target: str, model: Any) -> TargetShape:
    """The loaded ``--target`` model's sizes, from its input embeddings."""
    vocab_size, hidden_size = model.get_input_embeddings().weight.shape
    return TargetShape(model_identity(target), int(vocab_size), int(hidden_size))
