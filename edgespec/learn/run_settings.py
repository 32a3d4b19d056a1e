"""A run folder's ``run.json``: the settings that decide what its files hold, written when
the folder is made and checked by every run that continues it, so a run with other
settings stops rather than mixing its rows with the folder's (``train wisv-data``'s shard
store, ``train awc-data``'s scenarios)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError
from edgespec.output_paths import write_text_atomically

RUN_FILE = "run.json"


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (names a rollout head in ``run.json``)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_run_settings(folder: Path, settings: dict[str, Any], what: str) -> None:
    """Create ``folder`` with ``settings`` in its ``run.json``, or check that the one there
    holds the same: a difference is a :class:`UserInputError` naming the settings that
    differ, ``"<folder> holds <what> with other settings (a, b): remove the folder or
    choose another --out"``. ``train wisv-data``'s store and ``train awc-data``'s folder
    keep their settings this way."""
    run = folder / RUN_FILE
    if run.is_file():
        before = _read_settings(run)
        changed = sorted(k for k in {*before, *settings} if before.get(k) != settings.get(k))
        if changed:
            raise UserInputError(
                f"{folder} holds {what} with other settings ({', '.join(changed)}): "
                "remove the folder or choose another --out"
            )
        return
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomically(run, json.dumps(settings, indent=1, sort_keys=True) + "\n")


def _read_settings(run: Path) -> dict[str, Any]:
    """The settings object of a ``run.json``; one that is not is named."""
    try:
        found = json.loads(run.read_text(encoding="utf-8"))
    except ValueError:  # not JSON, or not UTF-8
        found = None
    if not isinstance(found, dict):
        raise UserInputError(
            f"{run}: not a run settings file (a JSON object): remove the folder or choose "
            "another --out"
        )
    return found
