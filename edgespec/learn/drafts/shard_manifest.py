"""What a folder's distillation shards were generated with: the target and every setting
that changes a shard's content (:class:`ShardSettings`), recorded once in the folder
(:data:`MANIFEST_NAME`, written whole before its first shard, :func:`record_settings`).
A shard holds only token ids and logits, so without the record a rerun with another
target or other settings would add its shards to the old ones, or train on them, unnoticed;
:func:`check_shard_folder` refuses that in one line naming each setting that differs. A
folder of shards made before the record existed is taken as it is, with a warning."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError
from edgespec.output_paths import write_text_atomically

MANIFEST_NAME = "shard_settings.json"
MAX_MANIFEST_BYTES = 64 * 1024
"""A settings file is read up to this size (one is under 1 kB); a larger one is refused."""
FORMAT_KEY = "edgespec_shard_settings"


@dataclass(frozen=True, slots=True)
class ShardSettings:
    """The target (its name or resolved path, its vocabulary and hidden sizes) and the
    generation settings of a folder's shards (``sharegpt_limit`` is ``None`` when ShareGPT
    is not among the ``datasets``). Not ``--fast-head``: its continuations are the target's
    greedy ones up to the first token outside its head, so a run with it may finish the
    batches of a folder begun without it (docs/LEARN.md)."""

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


ALL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ShardSettings))
TARGET_FIELDS: tuple[str, ...] = ("target", "target_vocab_size", "target_hidden_size")
"""What shards trained on as they are must share with the run (``--skip-generate``,
``--train-data-dir``): their token ids and labels are the target's."""

_LABELS = {
    "target": "--target",
    "target_vocab_size": "the target's vocabulary size",
    "target_hidden_size": "the target's hidden size",
    "datasets": "--datasets",
    "sharegpt_limit": "--sharegpt-limit",
    "batch_size": "--batch-size",
    "max_prompt_tokens": "--max-prompt-tokens",
    "max_new_tokens": "--max-new-tokens",
    "top_k": "top-k",
    "seed": "--seed",
    "temperature": "--sample-temperature",
}


def has_shards(folder: Path) -> bool:
    """Whether ``folder`` holds a ``shard_*.pt`` file."""
    return folder.is_dir() and any(folder.glob("shard_*.pt"))


def record_settings(folder: Path, settings: ShardSettings) -> None:
    """Write ``settings`` to ``folder``'s :data:`MANIFEST_NAME`, whole or not at all."""
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps({FORMAT_KEY: 1, **asdict(settings)}, indent=1)
    write_text_atomically(folder / MANIFEST_NAME, text + "\n")


def read_settings(folder: Path) -> dict[str, Any] | None:
    """The settings recorded in ``folder`` as a JSON object (``None`` when there is no
    record); a file that is not one is a one-line error naming it."""
    path = folder / MANIFEST_NAME
    if not path.is_file():
        return None
    with path.open("rb") as manifest:
        data = manifest.read(MAX_MANIFEST_BYTES + 1)
    where = f"{path}: not a shard settings file"
    if len(data) > MAX_MANIFEST_BYTES:
        raise UserInputError(f"{where} (over {MAX_MANIFEST_BYTES:,} bytes)")
    try:
        recorded = json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{where} (not valid JSON: {exc.msg})") from None
    except UnicodeDecodeError:
        raise UserInputError(f"{where} (not UTF-8 text)") from None
    if not isinstance(recorded, dict) or FORMAT_KEY not in recorded:
        raise UserInputError(f"{where} (no {FORMAT_KEY!r} key)")
    return recorded


def check_shard_folder(
    flag: str, folder: Path, settings: ShardSettings, compared: Sequence[str]
) -> str | None:
    """Check that the shards in ``folder`` (given as ``flag``) were made with
    ``settings``' ``compared`` fields: any that differs is a one-line
    :class:`~edgespec.errors.UserInputError` naming each and the folder. Returns a warning
    for shards with no record (made by an older edgespec), else ``None`` (no shards yet,
    or the same settings)."""
    if not has_shards(folder):
        return None
    recorded = read_settings(folder)
    if recorded is None:
        return (
            f"warning: {flag} {str(folder)!r} holds shards but no {MANIFEST_NAME} (made "
            "before edgespec recorded it): their target and settings are unknown, so they "
            "are used as they are"
        )
    now = json.loads(json.dumps(asdict(settings)))  # tuples as lists, as recorded
    differ = [
        f"{_LABELS[name]} {_shown(recorded, name)} there, {_shown(now, name)} now"
        for name in compared
        if name not in recorded or recorded[name] != now[name]
    ]
    if differ:
        raise UserInputError(
            f"{flag} {str(folder)!r} holds shards made with other settings "
            f"({'; '.join(differ)}): give a new {flag}, or the settings it was made with"
        )
    return None


def _shown(values: dict[str, Any], name: str) -> str:
    if name not in values:
        return "not recorded"
    value = values[name]
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return repr(value) if isinstance(value, str) else str(value)
