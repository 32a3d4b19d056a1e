"""A folder's settings record: the settings that decide what its files hold, written when
the folder is first filled and checked by every run that continues or reads it, so a run
with other settings stops rather than mixing its files with the folder's. One reader (a
JSON object, read up to :data:`MAX_SETTINGS_BYTES`: :func:`read_settings`), one comparison
(:func:`settings_differences`), one refusal (:func:`other_settings_error`) and one writer
(:func:`write_settings`) serve every record: ``run.json`` (:func:`record_run_settings`,
``train wisv-data``'s shard store and ``train awc-data``'s scenarios), the shard
folders' ``shard_settings.json`` (``train draft --data-dir`` and
``--text-data-dir``, ``train text-shards --out``, read by ``train feature-draft
--data-dir`` for its target, :mod:`edgespec.learn.drafts.shard_manifest`), ``train
feature-draft --features-dir``'s ``feature_settings.json``
(:mod:`edgespec.learn.drafts.feature_record`); ``reproduce wisv-heldout``'s
``heldout-plan.json`` is read and written here too, and compared as its typed plan (its
refusal names the command that started it)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError
from edgespec.output_paths import write_text_atomically

RUN_FILE = "run.json"
MAX_SETTINGS_BYTES = 64 * 1024
"""A settings record is read up to this size (one is under 2 kB); a larger one is refused."""


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (names a rollout head in ``run.json``)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_settings(path: Path, required_key: str | None = None) -> dict[str, Any] | None:
    """The JSON object in ``path`` (``None`` when there is no such file); one that is not
    one (or lacks ``required_key``) is a one-line :class:`UserInputError` naming the file,
    ``"<path>: not a settings file (<why>)"``."""
    if not path.is_file():
        return None
    with path.open("rb") as record:
        data = record.read(MAX_SETTINGS_BYTES + 1)
    where = f"{path}: not a settings file"
    if len(data) > MAX_SETTINGS_BYTES:
        raise UserInputError(f"{where} (over {MAX_SETTINGS_BYTES:,} bytes)")
    try:
        found = json.loads(data.decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{where} (not valid JSON: {exc.msg})") from None
    except UnicodeDecodeError:
        raise UserInputError(f"{where} (not UTF-8 text)") from None
    if not isinstance(found, dict):
        raise UserInputError(f"{where} (not a JSON object)")
    if required_key is not None and required_key not in found:
        raise UserInputError(f"{where} (no {required_key!r} key)")
    return found


def write_settings(path: Path, settings: Mapping[str, Any]) -> None:
    """Write ``settings`` to ``path`` as JSON, whole or not at all (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps(settings, indent=1, sort_keys=True) + "\n")


def settings_differences(
    recorded: Mapping[str, Any],
    now: Mapping[str, Any],
    compared: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> list[str]:
    """Each of the ``compared`` settings (default: every one either holds, by name) whose
    recorded value is not the one ``now``, as ``"<label> <recorded> there, <now> now"``
    (the label is the setting's name unless ``labels`` gives one)."""
    names = sorted({*recorded, *now}) if compared is None else compared
    now_as_recorded = json.loads(json.dumps(now))  # tuples as lists, as recorded
    return [
        f"{(labels or {}).get(name, name)} {_shown(recorded, name, 'not recorded')} there, "
        f"{_shown(now_as_recorded, name, 'not set')} now"
        for name in names
        if name not in recorded
        or name not in now_as_recorded
        or recorded[name] != now_as_recorded[name]
    ]


def other_settings_error(
    where: str, what: str, differences: Sequence[str], flag: str
) -> UserInputError:
    """The refusal of a folder (``where``: the flag and folder that name it) holding
    ``what`` made with other settings: one line naming each difference and what to do."""
    return UserInputError(
        f"{where} holds {what} made with other settings ({'; '.join(differences)}): "
        f"give a new {flag}, or the settings it was made with"
    )


USED_AS_THEY_ARE = "so they are used as they are"
"""What a run does with old files that it reads or resumes (:func:`unrecorded_warning`)."""


def unrecorded_warning(
    flag: str, folder: Path, holds: str, record: str, unknown: str, fate: str
) -> str:
    """The warning for a folder that ``holds`` files but no ``record`` (made before
    edgespec kept one): what is ``unknown`` of them, and what the run does with them
    (``fate``: :data:`USED_AS_THEY_ARE`, or how it writes over them)."""
    return (
        f"warning: {flag} {str(folder)!r} holds {holds} but no {record} (made before "
        f"edgespec recorded it): their {unknown} are unknown, {fate}"
    )


def flag_folder(flag: str, folder: Path) -> str:
    """How a refusal names a folder given as ``flag``: ``--data-dir '/runs/distill'``."""
    return f"{flag} {str(folder)!r}"


def record_run_settings(
    folder: Path, settings: Mapping[str, Any], what: str, where: str | None = None
) -> None:
    """Create ``folder`` with ``settings`` in its ``run.json``, or check that the one there
    holds the same: a difference is :func:`other_settings_error` (``where``: default
    ``--out 'FOLDER'``). ``train wisv-data``'s store and ``train awc-data``'s folder keep
    their settings this way."""
    path = folder / RUN_FILE
    recorded = read_settings(path)
    if recorded is None:
        write_settings(path, settings)
        return
    if differences := settings_differences(recorded, settings):
        named = flag_folder("--out", folder) if where is None else where
        raise other_settings_error(named, what, differences, "--out")


def _shown(values: Mapping[str, Any], name: str, missing: str) -> str:
    """A setting's value as a refusal shows it."""
    if name not in values:
        return missing
    value = values[name]
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return repr(value) if isinstance(value, str) else str(value)
