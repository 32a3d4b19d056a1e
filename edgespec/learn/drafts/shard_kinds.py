"""What a shard folder may hold. Three commands write ``shard_*.pt`` folders of one format
but three kinds (:class:`ShardKind`): ``train draft --data-dir`` the target's continuations
(:data:`GENERATED`), ``train draft --text-data-dir`` its labels of texts
(:data:`LABELLED`), ``train text-shards --out`` texts without the target's labels
(:data:`TEXT`), each known by a setting only its record
(:mod:`edgespec.learn.drafts.shard_manifest`) holds. A folder of one kind given where
another is taken is refused in one line saying what it holds and what reads it
(:func:`check_kind`), not as a list of settings "not recorded"; and a folder shards are to
be written into must hold no model (:func:`check_holds_no_model`): a draft's folder given
as ``--out`` or ``--data-dir`` by mistake would get shards and a record beside the draft
(nor another command's ``run.json``). Also the folders around them: one shards are read
from must be a folder (:func:`check_shard_source`), ``train feature-draft
--features-dir`` one of its own (:func:`check_features_apart`), and a folder another
command writes into must hold no shards (:func:`check_holds_no_shards`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError
from edgespec.learn.run_settings import RUN_FILE, USED_AS_THEY_ARE, flag_folder
from edgespec.models.registry import FEATURE_DRAFT_MARKER, TRIMMED_MARKER


@dataclass(frozen=True, slots=True)
class ShardKind:
    """One kind of shard folder, known by a setting only its record holds (``key``): what
    its shards hold, the command that writes them, those that read them, and what a run
    writing into a folder of them does with shards there but unrecorded (``rerun``, for
    :func:`~edgespec.learn.run_settings.unrecorded_warning`)."""

    key: str
    what: str
    written_by: str
    read_by: str
    rerun: str


_READ_BY = "`train draft --{}-dir`, `--train-data-dir` and `train feature-draft --data-dir`"
GENERATED = ShardKind(
    key="max_new_tokens",
    what="the target's continuations",
    written_by="train draft --data-dir",
    read_by=_READ_BY.format("data"),
    rerun=USED_AS_THEY_ARE,  # resumed: the missing batches are added
)
LABELLED = ShardKind(
    key="label_batch_size",
    what="the target's labels of texts",
    written_by="train draft --text-data-dir",
    read_by=_READ_BY.format("text-data"),
    rerun=USED_AS_THEY_ARE,
)
TEXT = ShardKind(
    key="task_datasets",
    what="texts without the target's labels",
    written_by="train text-shards --out",
    read_by="`train feature-draft --data-dir` only",
    rerun="and this run writes its shards over those of the same numbers, leaving any "
    "others as they are",
)
KINDS = (GENERATED, LABELLED, TEXT)
LABELS_OF_THE_TARGET = (GENERATED, LABELLED)
"""What shards trained on as they are may be (``--train-data-dir``, ``--skip-generate``)."""


def check_kind(
    flag: str, folder: Path, recorded: Mapping[str, Any], kinds: Sequence[ShardKind]
) -> None:
    """The shards ``recorded`` of ``folder`` (given as ``flag``) must be one of ``kinds``:
    another is refused in one line naming what they are, what writes and reads them, and
    what ``flag`` takes. A record of none of them is left to the settings' comparison."""
    found = next((kind for kind in KINDS if kind.key in recorded), None)
    if found is not None and found not in kinds:
        wanted = " or ".join(kind.what for kind in kinds)
        raise UserInputError(
            f"{flag_folder(flag, folder)} holds shards of {found.what} (written by "
            f"`{found.written_by}`, read by {found.read_by}), not of {wanted}"
        )


def check_holds_no_model(flag: str, folder: Path, kept: str = "shards") -> None:
    """A folder ``kept`` (shards, or ``train feature-draft``'s features) are to be written
    into (given as ``flag``) must hold no model: a trimmed or feature draft, a model's
    ``config.json``, weights (nor another command's ``run.json``). Refused in one line
    naming the first such file; such a folder holds only them and their record."""
    if not folder.is_dir():
        return
    markers = {
        TRIMMED_MARKER: "a trimmed draft",
        FEATURE_DRAFT_MARKER: "a feature draft",
        "config.json": "a model",
        RUN_FILE: "a `train wisv-data` or `train awc-data` run",
    }
    named = [f"{what} ({name})" for name, what in markers.items() if (folder / name).is_file()]
    for pattern, what in (("*.safetensors", "model weights"), ("*.gguf", "a GGUF model")):
        named += [f"{what} ({path.name})" for path in sorted(folder.glob(pattern))]
    if named:
        raise UserInputError(
            f"{flag_folder(flag, folder)} holds {named[0]}, not {kept}: {kept} are written "
            f"into a folder of their own; give a new {flag}"
        )


def check_shard_source(flag: str, folder: Path) -> None:
    """A folder shards are read from (given as ``flag``) must be one: a missing path, a
    file or a saved model (:func:`check_holds_no_model`) is refused in one line saying
    which, not as a folder that holds no shards."""
    if not folder.exists():
        raise UserInputError(f"{flag_folder(flag, folder)}: no such folder")
    if not folder.is_dir():
        raise UserInputError(f"{flag_folder(flag, folder)} is a file, not a folder")
    check_holds_no_model(flag, folder)


def check_features_apart(features_dir: Path, data_dirs: Sequence[Path]) -> None:
    """``train feature-draft --features-dir`` must be a folder of its own: neither a
    ``--data-dir`` nor inside one, holding no shards (``shard_*.pt`` or their record):
    features written among shards would be read back as shards by later runs; and no
    saved model (a draft's files, :func:`check_holds_no_model`), as a shard folder
    holds none."""
    apart = "features are written into a folder of their own; give another --features-dir"
    for data_dir in data_dirs:
        inside = features_dir.resolve().is_relative_to(data_dir.resolve())
        if inside:
            where = "is" if features_dir.resolve() == data_dir.resolve() else "is inside"
            raise UserInputError(
                f"{flag_folder('--features-dir', features_dir)} {where} the --data-dir "
                f"{str(data_dir)!r}: {apart}"
            )
    if features_dir.is_dir():
        held = sorted(features_dir.glob("shard_*"))
        if held:
            raise UserInputError(
                f"{flag_folder('--features-dir', features_dir)} holds shards "
                f"({held[0].name}): {apart}"
            )
    check_holds_no_model("--features-dir", features_dir, "features")


def check_holds_no_shards(flag: str, folder: Path, what: str) -> None:
    """A folder another command writes ``what`` into (given as ``flag``) must hold no
    shards nor their record: refused in one line naming the first and what reads them."""
    held = sorted(path.name for path in folder.glob("shard_*")) if folder.is_dir() else []
    if held:
        raise UserInputError(
            f"{flag_folder(flag, folder)} holds shards ({held[0]}, read by `train draft` and "
            f"`train feature-draft`), not {what}: give a new {flag}"
        )
