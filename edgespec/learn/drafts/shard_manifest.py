"""What a folder's shards were made with, recorded once in the folder
(:data:`MANIFEST_NAME`, written whole before its first shard, :func:`record_settings`):
for ``train draft --data-dir``, the target and every setting that changes a generated
shard (:class:`ShardSettings`); for ``--text-data-dir``, the target, the texts and the
draft's kept tokens its labels are taken among (:class:`TextLabelSettings`); for ``train
text-shards --out``, whose tokenizer and which texts (:class:`TextShardSettings`). A shard
holds only token ids (and logits), so without the record a rerun with another target or
other settings would add its shards to the old ones, or train on them, unnoticed;
:func:`check_shard_folder` refuses that in one line naming each setting that differs
(:mod:`edgespec.learn.run_settings`, which reads, compares and writes every such record),
and :func:`check_shard_target` refuses shards of another target where only the target
must match (``train feature-draft --data-dir``); both first refuse a folder of another
kind, and a folder to write into that holds a model (:mod:`.shard_kinds`). A folder of
shards made before the record existed is taken as it is, with a warning saying what the
run does with them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from edgespec.learn.drafts import shard_kinds
from edgespec.learn.drafts.distill_data import label_width
from edgespec.learn.drafts.distill_text import LABEL_BATCH_SIZE
from edgespec.learn.drafts.draft_checks import TargetShape
from edgespec.learn.run_settings import (
    USED_AS_THEY_ARE,
    flag_folder,
    other_settings_error,
    read_settings,
    settings_differences,
    unrecorded_warning,
    write_settings,
)

MANIFEST_NAME = "shard_settings.json"
FORMAT_KEY = "edgespec_shard_settings"


@dataclass(frozen=True, slots=True)
class ShardSettings:
    """The target (its name or resolved path, its vocabulary and hidden sizes) and the
    generation settings of a folder's shards (``sharegpt_limit`` is ``None`` when ShareGPT
    is not among the ``datasets``). Not ``--fast-head``: its continuations are the target's
    greedy ones up to the first token outside its head, so a run with it may finish the
    batches of a folder begun without it (docs/LEARN.md), but its label width is: ``top_k``
    is all of a head of fewer tokens (so widths never differ within a folder)."""

    target: str
    target_vocab_size: int
    target_hidden_size: int
    datasets: tuple[str, ...]
    sharegpt_limit: int | None
    batch_size: int
    max_prompt_tokens: int
    max_new_tokens: int
    top_k: int
    seed: int
    temperature: float


@dataclass(frozen=True, slots=True)
class TextLabelSettings:
    """The target and what decides a ``--text-data-dir``'s teacher-forced shards: the texts
    (the training prompts of ``text_datasets``, the ``--datasets`` but ShareGPT, then
    ``conversations`` ShareGPT conversations), each cut to ``max_tokens``, labelled
    ``label_batch_size`` at a time with the ``top_k`` among the draft's kept tokens
    (``kept_tokens_sha256``: their sorted ids' SHA-256, ``None`` until a new draft has
    chosen them after generation)."""

    target: str
    target_vocab_size: int
    target_hidden_size: int
    text_datasets: tuple[str, ...]
    conversations: int
    max_tokens: int
    label_batch_size: int
    top_k: int | None
    kept_tokens_sha256: str | None


@dataclass(frozen=True, slots=True)
class TextShardSettings:
    """What decides ``train text-shards``' shards: the ``target`` whose tokenizer encoded
    the texts (named as a :class:`~edgespec.learn.drafts.draft_checks.TargetShape` names
    it; no sizes: no weights load), the texts (the training prompts of ``task_datasets``
    and ``conversations`` ShareGPT conversations), each cut to ``max_tokens``, and how they
    are laid out: the first ``prompt_tokens`` as the prompt, texts shorter than
    ``prompt_tokens + min_output_tokens`` left out, ``sequences_per_shard`` per shard."""

    target: str
    task_datasets: tuple[str, ...]
    conversations: int
    max_tokens: int
    prompt_tokens: int
    min_output_tokens: int
    sequences_per_shard: int


Settings = ShardSettings | TextLabelSettings | TextShardSettings
ALL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ShardSettings))
TARGET_FIELDS: tuple[str, ...] = ("target", "target_vocab_size", "target_hidden_size")
"""What shards trained on as they are must share with the run (``--skip-generate``,
``--train-data-dir``): their token ids and labels are the target's."""
TEXT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(TextLabelSettings))
TEXT_FIELDS_BUT_KEPT = tuple(
    name for name in TEXT_FIELDS if name not in ("kept_tokens_sha256", "top_k")
)
"""What a ``--text-data-dir`` is checked for before a new draft has chosen its tokens (and
so the label width, at most their number)."""
TEXT_SHARD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(TextShardSettings))

_LABELS = {
    "target": "--target",
    "target_vocab_size": "the target's vocabulary size",
    "target_hidden_size": "the target's hidden size",
    "datasets": "--datasets",
    "sharegpt_limit": "--sharegpt-limit",
    "batch_size": "--batch-size",
    "max_prompt_tokens": "--max-prompt-tokens",
    "max_new_tokens": "--max-new-tokens",
    "top_k": "the labels per position (top-k)",
    "seed": "--seed",
    "temperature": "--sample-temperature",
    "text_datasets": "--datasets (all but sharegpt)",
    "conversations": "--conversations",
    "max_tokens": "--text-max-tokens",
    "label_batch_size": "the labelling batch size",
    "kept_tokens_sha256": "the draft's kept tokens (SHA-256)",
    "task_datasets": "the task datasets",
    "prompt_tokens": "the prompt tokens",
    "min_output_tokens": "the fewest output tokens",
    "sequences_per_shard": "the sequences per shard",
}
_TEXT_SHARD_LABELS = {**_LABELS, "max_tokens": "--max-tokens"}


def text_label_settings(
    target: ShardSettings,
    datasets: Sequence[str],
    conversations: int,
    max_tokens: int,
    kept: Sequence[int] | None,
) -> TextLabelSettings:
    """The :class:`TextLabelSettings` of texts of ``datasets`` and ``conversations`` cut to
    ``max_tokens``, labelled by ``target``'s target among the ``kept`` tokens (``None``:
    not chosen yet)."""
    digest = (
        None if kept is None else hashlib.sha256(json.dumps(sorted(int(t) for t in kept)).encode())
    )
    return TextLabelSettings(
        target=target.target,
        target_vocab_size=target.target_vocab_size,
        target_hidden_size=target.target_hidden_size,
        text_datasets=tuple(name for name in datasets if name != "sharegpt"),
        conversations=conversations,
        max_tokens=max_tokens,
        label_batch_size=LABEL_BATCH_SIZE,
        top_k=None if kept is None else label_width(len(kept)),
        kept_tokens_sha256=None if digest is None else digest.hexdigest(),
    )


def has_shards(folder: Path) -> bool:
    """Whether ``folder`` holds a ``shard_*.pt`` file."""
    return folder.is_dir() and any(folder.glob("shard_*.pt"))


def record_settings(folder: Path, settings: Settings) -> None:
    """Write ``settings`` to ``folder``'s :data:`MANIFEST_NAME`, whole or not at all."""
    write_settings(folder / MANIFEST_NAME, {FORMAT_KEY: 1, **asdict(settings)})


def read_recorded(folder: Path) -> dict[str, Any] | None:
    """The settings recorded in ``folder`` (``None`` when there is no record); a file that
    is not one is a one-line error naming it
    (:func:`~edgespec.learn.run_settings.read_settings`)."""
    return read_settings(folder / MANIFEST_NAME, FORMAT_KEY)


def check_shard_folder(
    flag: str, folder: Path, settings: Settings, compared: Sequence[str]
) -> str | None:
    """Check that the shards in ``folder`` (given as ``flag``) were made with
    ``settings``' ``compared`` fields: any that differs is a one-line
    :class:`~edgespec.errors.UserInputError` naming each and the folder. ``compared``
    :data:`TARGET_FIELDS`: the shards are only read (trained on as they are), so any with
    the target's labels serve; else the run writes its ``settings``' kind of shards into
    ``folder``, which must hold no other kind and no model
    (:mod:`edgespec.learn.drafts.shard_kinds`). Returns a warning for shards with no
    record (made by an older edgespec), else ``None`` (no shards yet, or the same
    settings)."""
    labels = _TEXT_SHARD_LABELS if isinstance(settings, TextShardSettings) else _LABELS
    kinds: tuple[shard_kinds.ShardKind, ...]
    if tuple(compared) == TARGET_FIELDS:
        kinds, fate = shard_kinds.LABELS_OF_THE_TARGET, USED_AS_THEY_ARE
    else:
        shard_kinds.check_holds_no_model(flag, folder)
        kinds = (_KIND_OF[type(settings)],)
        fate = kinds[0].rerun
    now = asdict(settings)
    return _check(flag, folder, now, lambda recorded: compared, labels, kinds, fate)


def check_shard_target(flag: str, folder: Path, shape: TargetShape) -> str | None:
    """Check that the shards in ``folder`` (given as ``flag``) hold ``shape``'s target's
    tokens: the target their record names and, where it holds them, its vocabulary and
    hidden sizes (``train text-shards``' record has none: only the tokenizer made its
    shards). A difference is :func:`check_shard_folder`'s refusal, no record its warning."""
    now = {
        "target": shape.name,
        "target_vocab_size": shape.vocab_size,
        "target_hidden_size": shape.hidden_size,
    }

    def compared(recorded: dict[str, Any]) -> Sequence[str]:
        return ("target", *(name for name in TARGET_FIELDS[1:] if name in recorded))

    return _check(flag, folder, now, compared, _LABELS, shard_kinds.KINDS, USED_AS_THEY_ARE)


_KIND_OF: dict[type[Settings], shard_kinds.ShardKind] = {
    ShardSettings: shard_kinds.GENERATED,
    TextLabelSettings: shard_kinds.LABELLED,
    TextShardSettings: shard_kinds.TEXT,
}


def _check(
    flag: str,
    folder: Path,
    now: dict[str, Any],
    compared: Callable[[dict[str, Any]], Sequence[str]],
    labels: dict[str, str],
    kinds: Sequence[shard_kinds.ShardKind],
    fate: str,
) -> str | None:
    """:func:`check_shard_folder` of ``now``'s settings, those ``compared`` of a record of
    one of the ``kinds`` (what happens to shards of none: ``fate``)."""
    if not has_shards(folder):
        return None
    recorded = read_recorded(folder)
    if recorded is None:
        unknown = "target and settings"
        return unrecorded_warning(flag, folder, "shards", MANIFEST_NAME, unknown, fate)
    shard_kinds.check_kind(flag, folder, recorded, kinds)
    if differences := settings_differences(recorded, now, compared(recorded), labels):
        raise other_settings_error(flag_folder(flag, folder), "shards", differences, flag)
    return None
