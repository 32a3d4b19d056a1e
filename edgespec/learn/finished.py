"""What a finished ``edgespec train`` run leaves at its ``--out``, and the refusal to replace
it unawares: as ``trace``, ``profile``, ``calibrate`` and ``reproduce`` refuse an ``--out``
holding an earlier run's results (:func:`edgespec.output_paths.claim_folder`), a train
command that writes a finished artifact (a draft, a feature draft, a stop predictor, a
WC-DNN, a WISV head) refuses an ``--out`` that holds one unless ``--overwrite`` is given
(:func:`check_replaceable`, :func:`check_file_replaceable`), when its flags are parsed,
before any model or data loads. The data stages that a rerun continues (``train draft
--data-dir``, ``--text-data-dir``, ``feature-draft --features-dir``, ``text-shards``,
``awc-data``, ``wisv-data``) are not artifacts here: they keep resuming; nor is the training
checkpoint that ``train draft`` and ``feature-draft`` keep in ``--out`` until the draft is
saved (``.training-checkpoint.pt``, :mod:`edgespec.learn.drafts.checkpoint`): a folder
holding only one is resumed, not refused (``--overwrite`` discards it)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from edgespec.errors import UserInputError
from edgespec.models.registry import FEATURE_DRAFT_MARKER, TRIMMED_MARKER
from edgespec.output_paths import check_run_paths, shown_names


@dataclass(frozen=True, slots=True)
class Artifact:
    """A finished run's files in its folder: ``patterns`` (names or glob patterns, relative
    to the folder) and, for the refusal, what they are (``what``, e.g. "a stop-predictor
    report"); ``kinds`` name what the folder holds more exactly by a marker file found
    there (marker name → what), the first found winning."""

    what: str
    patterns: tuple[str, ...]
    kinds: tuple[tuple[str, str], ...] = ()


DRAFT = Artifact(
    what="a model",
    patterns=(
        TRIMMED_MARKER,
        FEATURE_DRAFT_MARKER,
        "config.json",
        "generation_config.json",
        "*.safetensors",
        "model.safetensors.index.json",
    ),
    kinds=((TRIMMED_MARKER, "a trimmed draft"), (FEATURE_DRAFT_MARKER, "a feature draft")),
)
"""A saved draft, trimmed (``train draft``) or feature (``train feature-draft``), or any
model whose files one would replace or be mixed with (``config.json``, weights): both
commands refuse all of them, so that a draft is never saved over another model's files,
nor beside the other kind's marker (the loader would take the folder for that kind)."""

STOP_REPORT = Artifact("a stop-predictor report", ("study.json", "REPORT.md"))
"""``train stop-predictor --report-dir``'s files."""


def add_overwrite(parser: argparse.ArgumentParser, what: str, also: str = "") -> None:
    """``--overwrite``: replace ``what`` (e.g. "a draft saved at --out") instead of
    refusing it; ``also`` says what else it does, if anything."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace {what} (default: refused){also}",
    )


TRAINING_CHECKPOINT = "; discard a training checkpoint there (default: resumed)"
"""What ``--overwrite`` also does for ``train draft`` and ``feature-draft``."""


def found_files(folder: Path, artifact: Artifact) -> list[Path]:
    """The files of ``artifact`` in ``folder`` (none when it is not a folder), sorted."""
    if not folder.is_dir():
        return []
    matched = {path for pattern in artifact.patterns for path in folder.glob(pattern)}
    return sorted(path for path in matched if path.is_file())


def held(folder: Path, artifact: Artifact) -> str:
    """What ``folder`` holds of ``artifact``, in words: the kind its marker names, or
    ``artifact.what``."""
    kind = next((what for name, what in artifact.kinds if (folder / name).is_file()), None)
    return artifact.what if kind is None else kind


def check_replaceable(flag: str, folder: Path, artifact: Artifact, overwrite: bool) -> None:
    """Refuse, in one line naming ``flag``, the folder, what it holds and its files, a
    ``folder`` holding files of ``artifact`` unless ``overwrite``; and, whatever
    ``overwrite`` says, a path of it this run could not write
    (:func:`~edgespec.output_paths.check_run_paths`). Nothing is removed here: a run
    that stops before it saves leaves the earlier files as they were
    (:func:`remove_earlier`)."""
    check_run_paths(folder, artifact.patterns)
    found = found_files(folder, artifact)
    if found and not overwrite:
        names = shown_names([path.name for path in found])
        raise UserInputError(
            f"{flag} {folder} already holds {held(folder, artifact)} ({names}); give another "
            f"{flag}, or --overwrite to replace its files"
        )


def remove_earlier(folder: Path, artifact: Artifact) -> list[Path]:
    """Remove the files of ``artifact`` in ``folder`` (those ``--overwrite`` replaces),
    right before the run saves its own, so that none of an earlier save (the other kind of
    draft's marker, weights in other files) is left mixed with them; returns them."""
    found = found_files(folder, artifact)
    for path in found:
        with suppress(FileNotFoundError):
            path.unlink()
    return found


def check_file_replaceable(flag: str, path: Path, what: str, overwrite: bool) -> None:
    """Refuse, in one line naming ``flag`` and the file, an output file that already
    holds something (is not empty) unless ``overwrite``; ``what`` is what the run writes
    there (e.g. "the stop predictor"). The file is replaced whole when the run writes."""
    if not overwrite and path.is_file() and path.stat().st_size > 0:
        raise UserInputError(
            f"{flag} {path} already exists; give another {flag}, or --overwrite to replace "
            f"it with {what}"
        )


def check_files_replaceable(
    flag: str, folder: Path, names: Sequence[str], what: str, overwrite: bool, other: str = ""
) -> None:
    """:func:`check_file_replaceable` for a run that writes several files (``names``) into
    one ``folder``: refused naming the folder, ``what`` they are and those it already
    holds; ``other`` adds another way out (e.g. "another --name")."""
    found = [name for name in names if (folder / name).is_file()]
    found = [name for name in found if (folder / name).stat().st_size > 0]
    if found and not overwrite:
        alternatives = f"another {flag}" + (f", {other}" if other else "")
        raise UserInputError(
            f"{flag} {folder} already holds {what} ({shown_names(found)}); give "
            f"{alternatives}, or --overwrite to replace its files"
        )
