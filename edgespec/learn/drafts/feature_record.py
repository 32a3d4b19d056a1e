"""What a ``train feature-draft --features-dir`` holds: the target whose features its
files are (its name or resolved path, vocabulary and hidden sizes) and, for each
``--data-dir`` name, the folder whose shards they are (a features file is named
``features_<folder name>_<shard>``), recorded in :data:`RECORD_NAME` before the first
features file is written (:func:`record_features_folder`) and checked before the target
loads (:func:`check_features_folder`): features of another target, or of another folder of
the same name, are refused in one line naming each difference, as every settings record is
(:mod:`edgespec.learn.run_settings`). A ``--data-dir`` of a new name adds itself to the
record. A folder of features made before the record existed is used as it is, with a
warning."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError
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

RECORD_NAME = "feature_settings.json"
FORMAT_KEY = "edgespec_feature_settings"
FLAG = "--features-dir"
_LABELS = {
    "target": "--target",
    "target_vocab_size": "the target's vocabulary size",
    "target_hidden_size": "the target's hidden size",
}


def source_folders(data_dirs: Sequence[Path]) -> dict[str, str]:
    """Each ``--data-dir``'s name and resolved path; two folders of one name are refused
    (their features would be written to the same files)."""
    found: dict[str, str] = {}
    for directory in data_dirs:
        name, path = directory.name, str(directory.resolve())
        if found.get(name, path) != path:
            raise UserInputError(
                f"--data-dir {found[name]!r} and {path!r} share the name {name!r}: their "
                f"features would share files in {FLAG}; give folders of different names"
            )
        found[name] = path
    return found


def has_features(folder: Path) -> bool:
    """Whether ``folder`` holds a ``features_*.pt`` file."""
    return folder.is_dir() and any(folder.glob("features_*.pt"))


def check_features_folder(
    folder: Path, shape: TargetShape, data_dirs: Sequence[Path]
) -> str | None:
    """Check that the features in ``folder`` are ``shape``'s target's, and that each
    ``data_dirs`` name recorded there is the same folder: a difference is a one-line
    :class:`~edgespec.errors.UserInputError` naming each. Returns a warning for features
    with no record (made by an older edgespec), else ``None``."""
    sources = source_folders(data_dirs)
    if not has_features(folder):
        return None
    recorded = _recorded(folder)
    if recorded is None:
        unknown = "target and shards"
        return unrecorded_warning(FLAG, folder, "features", RECORD_NAME, unknown, USED_AS_THEY_ARE)
    differences = settings_differences(recorded, _target(shape), tuple(_LABELS), _LABELS)
    recorded_sources = recorded["data_dirs"]
    differences += [
        f"--data-dir named {name!r} {recorded_sources[name]!r} there, {path!r} now"
        for name, path in sources.items()
        if recorded_sources.get(name, path) != path
    ]
    if differences:
        raise other_settings_error(flag_folder(FLAG, folder), "features", differences, FLAG)
    return None


def record_features_folder(folder: Path, shape: TargetShape, data_dirs: Sequence[Path]) -> None:
    """Before features are written (:func:`check_features_folder` passed): record
    ``shape`` and the ``data_dirs`` in a folder with no features yet, or add the new
    ``data_dirs`` names to its record (none is written for a folder of features made
    before records were)."""
    sources = source_folders(data_dirs)
    recorded = _recorded(folder)
    if not has_features(folder):
        recorded = None
    elif recorded is None:
        return
    known = {} if recorded is None else recorded["data_dirs"]
    if recorded is None or not sources.keys() <= known.keys():
        record = {FORMAT_KEY: 1, **_target(shape), "data_dirs": {**known, **sources}}
        write_settings(folder / RECORD_NAME, record)


def _target(shape: TargetShape) -> dict[str, Any]:
    return {
        "target": shape.name,
        "target_vocab_size": shape.vocab_size,
        "target_hidden_size": shape.hidden_size,
    }


def _recorded(folder: Path) -> dict[str, Any] | None:
    """The folder's record (``None``: none), its ``data_dirs`` checked to be an object of
    folder paths."""
    path = folder / RECORD_NAME
    recorded = read_settings(path, FORMAT_KEY)
    if recorded is None:
        return None
    sources = recorded.get("data_dirs")
    if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
        raise UserInputError(f"{path}: not a settings file (no 'data_dirs' object of paths)")
    return recorded
