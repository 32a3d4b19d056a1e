"""The training checkpoint of `edgespec train draft` and `train feature-draft`: a hidden file
in ``--out`` (:data:`CHECKPOINT_NAME`), written whole or not at all (a temporary file, then
``os.replace``), that holds what makes a rerun's training continue exactly where it
stopped: the model's and the optimizer's (and learning-rate schedule's) state, the loop's
:class:`Position` (step, epoch, batches of the epoch done, the batch-order random state at
the epoch's start, torch's random state, the training seconds spent) and what the training
was: its settings (flags, as JSON) and a SHA-256 of its data (:func:`data_sha256`).

A checkpoint of other settings is refused when the flags are parsed, before any model loads
(:func:`check_resumable`), naming each flag that differs; one that cannot be read is refused
as early, naming the file. ``--overwrite`` discards either. Written and resumed by
:mod:`edgespec.learn.drafts.checkpointing`."""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
import random
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from types import UnionType
from typing import Any

import torch

from edgespec.errors import UserInputError
from edgespec.learn.drafts.shard_writing import process_runs
from edgespec.learn.run_settings import settings_differences
from edgespec.output_paths import check_run_paths, temporary_of, write_atomically

CHECKPOINT_NAME = ".training-checkpoint.pt"
CHECKPOINT_EVERY_S = 60.0
"""A training loop saves its checkpoint at most this often (and when Ctrl-C or SIGTERM
stops it): a crash loses at most this much training, and the saves take little of it (the
default draft's checkpoint, model and AdamW state, is 55.9 MB, saved in 0.12 s here:
benchmarks/probes/checkpoint_size.py)."""
FORMAT_KEY = "edgespec_training_checkpoint"
FORMAT_VERSION = 1
DISCARD = "--overwrite discards it and trains from the start"
CUT_OFF = "cut off or damaged"
ZIP_MAGIC = b"PK\x03\x04"
"""How a file ``torch.save`` writes (a zip archive) begins."""


@dataclass(frozen=True, slots=True)
class Position:
    """Where a training loop stands after ``step`` optimizer steps of ``total_steps``: in
    ``epoch`` (from 0), ``batch`` of its batches done; ``epoch_rng`` is the batch-order
    generator's state at the epoch's start (before its shuffle) and ``epoch_order`` the
    order its shuffle started from (empty where each epoch shuffles afresh);
    ``torch_rng`` torch's random state (``None``: not taken); ``elapsed_s`` the training
    seconds spent, which a time budget and a schedule that follows it go on from."""

    step: int = 0
    total_steps: int = 0
    epoch: int = 0
    batch: int = 0
    epoch_rng: tuple[Any, ...] | None = None
    epoch_order: tuple[int, ...] = ()
    torch_rng: torch.Tensor | None = None
    elapsed_s: float = 0.0


@dataclass(frozen=True, slots=True, eq=False)
class Checkpoint:
    """One checkpoint: what the training was (``settings``, a JSON object of flags to
    values, and its data's :func:`data_sha256`), when it was saved (Unix seconds), where
    it stood and the states of the model, the optimizer and the schedule (``None``: the
    loop sets its learning rate itself)."""

    settings: dict[str, Any]
    data_sha256: str
    saved_at_unix: float
    position: Position
    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    scheduler: dict[str, Any] | None


def checkpoint_path(out: Path) -> Path:
    """Where the checkpoint of a run saving its draft to ``out`` is kept."""
    return out / CHECKPOINT_NAME


def data_sha256(tensors: Iterable[torch.Tensor]) -> str:
    """SHA-256 of ``tensors`` in order: each one's dtype, shape and bytes."""
    digest = hashlib.sha256()
    for tensor in tensors:
        digest.update(f"{tensor.dtype}{tuple(tensor.shape)};".encode())
        flat = tensor.detach().reshape(-1).contiguous()
        if flat.numel():
            digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def write_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    """Save ``checkpoint`` to ``path`` whole or not at all (its folder made)."""
    position = asdict(checkpoint.position)
    payload = {
        FORMAT_KEY: FORMAT_VERSION,
        "settings_json": json.dumps(checkpoint.settings, sort_keys=True),
        "data_sha256": checkpoint.data_sha256,
        "saved_at_unix": checkpoint.saved_at_unix,
        "position": position,
        "model": checkpoint.model,
        "optimizer": checkpoint.optimizer,
        "scheduler": checkpoint.scheduler,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, functools.partial(torch.save, payload))


def read_checkpoint(path: Path) -> Checkpoint:
    """The checkpoint in ``path``; a file that is no readable checkpoint (cut off, damaged,
    another file, another version) is a one-line :class:`UserInputError` naming it."""
    with path.open("rb") as file:
        start = file.read(len(ZIP_MAGIC))
    if start != ZIP_MAGIC:
        raise _unreadable(path, "empty" if not start else "not a file torch.save wrote")
    try:
        data = torch.load(path, weights_only=True)
    except OSError as exc:  # one naming no file: a seek past the end of one cut off
        raise _unreadable(path, str(exc.strerror) if exc.filename else CUT_OFF) from None
    except (RuntimeError, EOFError, ValueError, pickle.UnpicklingError) as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0].split(". ")[0]
        raise _unreadable(path, CUT_OFF if "zip archive" in reason else reason) from None
    if not isinstance(data, dict) or data.get(FORMAT_KEY) != FORMAT_VERSION:
        raise _unreadable(path, f"no {FORMAT_KEY} {FORMAT_VERSION} record")
    try:
        settings = json.loads(data["settings_json"])
        checkpoint = Checkpoint(
            settings=settings,
            data_sha256=_typed(data["data_sha256"], str),
            saved_at_unix=float(data["saved_at_unix"]),
            position=_position(data["position"]),
            model=_typed(data["model"], dict),
            optimizer=_typed(data["optimizer"], dict),
            scheduler=None if data["scheduler"] is None else _typed(data["scheduler"], dict),
        )
    except KeyError as exc:
        raise _unreadable(path, f"no {exc} entry") from None
    except (TypeError, ValueError) as exc:
        raise _unreadable(path, f"bad {exc}") from None
    if not isinstance(settings, dict):
        raise _unreadable(path, "its settings are no JSON object")
    return checkpoint


def _unreadable(path: Path, reason: str) -> UserInputError:
    return UserInputError(f"{path}: not a readable training checkpoint ({reason}); {DISCARD}")


def _typed(value: Any, kind: type | UnionType) -> Any:
    """``value``, or a ``TypeError`` naming the ``kind`` it is not."""
    if not isinstance(value, kind):
        wanted = getattr(kind, "__name__", str(kind))
        raise TypeError(f"{wanted} expected, got {type(value).__name__}")
    return value


def _position(raw: Any) -> Position:
    """A :class:`Position` from its saved fields, each checked (the random states by
    setting them on a generator of their own)."""
    fields = _typed(raw, dict)
    ints = {name: int(_typed(fields[name], int)) for name in ("step", "total_steps", "epoch")}
    order = tuple(int(_typed(i, int)) for i in _typed(fields["epoch_order"], tuple | list))
    rng = fields["epoch_rng"]
    if rng is not None:
        random.Random().setstate(_typed(rng, tuple))
    torch_rng = fields["torch_rng"]
    if torch_rng is not None:
        _typed(torch_rng, torch.Tensor)
        if torch_rng.dtype != torch.uint8:
            raise TypeError(f"torch_rng of {torch_rng.dtype}, not torch.uint8")
    batch = int(_typed(fields["batch"], int))
    elapsed_s = float(_typed(fields["elapsed_s"], float | int))
    if min(*ints.values(), batch) < 0 or not elapsed_s >= 0:
        raise ValueError("position: a negative count or time")
    return Position(**ints, batch=batch, epoch_rng=rng, epoch_order=order,
                    torch_rng=torch_rng, elapsed_s=elapsed_s)  # fmt: skip


def check_resumable(out: Path, settings: Mapping[str, Any], overwrite: bool) -> None:
    """Before any model loads: a checkpoint in ``out`` that a rerun cannot resume is
    refused in one line, unless ``overwrite`` (which discards it when training starts):
    one made with other ``settings``, naming each flag that differs (its value there and
    now), or one that cannot be read, naming the file; and, whatever ``overwrite`` says,
    a folder where the checkpoint is written."""
    check_run_paths(out, (CHECKPOINT_NAME,))
    path = checkpoint_path(out)
    if overwrite or not path.is_file():
        return
    checkpoint = read_checkpoint(path)
    check_same_settings(path, checkpoint.settings, settings)


def check_same_settings(path: Path, saved: Mapping[str, Any], now: Mapping[str, Any]) -> None:
    """Refuse, naming each that differs, a checkpoint (``path``) of other settings."""
    if differences := settings_differences(saved, now):
        raise UserInputError(
            f"--out {path.parent} holds a training checkpoint ({path.name}) made with other "
            f"settings ({'; '.join(differences)}): rerun with those to resume it, or "
            f"{DISCARD}"
        )


def remove_leftover_temporaries(path: Path) -> None:
    """Remove the temporary files of the checkpoint ``path`` whose writer is gone (a run
    killed outright while it saved); never read as checkpoints either way."""
    if not path.parent.is_dir():
        return
    for found in path.parent.glob(f".{path.name}.*.tmp"):
        of = temporary_of(found)
        if of is not None and of[0] == path.name and not process_runs(of[1]):
            found.unlink(missing_ok=True)
