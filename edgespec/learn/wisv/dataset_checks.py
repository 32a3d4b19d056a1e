"""How :meth:`edgespec.learn.wisv.dataset.WisvDataset.load` reads a wisv-data file's arrays
(a file that is not a whole ``.npz`` archive is refused) and what it checks of them before
it builds the dataset: every key there, each array of its kind and rank, one
entry per mismatch in the mismatch arrays and one per prompt in the prompt arrays, 0/1
flags. A failed check is a :class:`ValueError` naming the file, the array and the problem.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

MISMATCH_KEYS = ("prompt_index", "position", "round", "offset", "draft_id", "target_id", "critical")
PROMPT_KEYS = ("prompts", "prompt_tokens", "output_tokens", "num_rounds", "agreement")
ROLLOUT_KEYS = ("accepted", "off_reference", "local_critical")


HIDDEN_KEYS = ("draft_hidden", "target_hidden")
ANSWER_KEYS = ("continuation_answer", "reference_answer")
REQUIRED_KEYS = (*MISMATCH_KEYS, *PROMPT_KEYS, *HIDDEN_KEYS, *ANSWER_KEYS, "meta")
FLAG_KEYS = ("critical", *ROLLOUT_KEYS)
FLOAT_KEYS = frozenset({*HIDDEN_KEYS, "agreement", "similarity"})

_KINDS = {"i": "integers", "f": "floats", "U": "strings"}


def _kind(key: str) -> str:
    if key in FLOAT_KEYS:
        return "f"
    return "U" if key in ANSWER_KEYS else "i"


def read_arrays(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """Every array of the ``.npz`` archive ``path`` by name (no pickled objects)."""
    unreadable = (ValueError, EOFError, zipfile.BadZipFile, zlib.error)
    try:
        data = np.load(path, allow_pickle=False)
    except unreadable as exc:
        reason = "empty file" if isinstance(exc, EOFError) else "unrecognised contents"
        if isinstance(exc, zipfile.BadZipFile):
            reason = f"a cut-off or damaged zip archive: {exc}"
        raise ValueError(f"{path}: not a wisv-data file (not an .npz archive: {reason})") from exc
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: not a wisv-data file (a single .npy array, not an .npz)")
    with data:
        key = ""
        try:
            arrays = {}
            for key in data.files:
                arrays[key] = data[key]
        except unreadable as exc:
            reason = "pickled objects" if isinstance(exc, ValueError) else f"damaged: {exc}"
            raise ValueError(f"{path}: array {key} cannot be read ({reason})") from exc
    return arrays


def check_arrays(path: Path, arrays: Mapping[str, np.ndarray[Any, Any]]) -> None:
    """The checks of the module docstring, on the file's arrays by name."""
    missing = [k for k in REQUIRED_KEYS if k not in arrays]
    if missing:
        raise ValueError(f"{path}: not a wisv-data file (missing {', '.join(missing)})")
    rollout = [k for k in ROLLOUT_KEYS if k in arrays]
    if rollout and len(rollout) < len(ROLLOUT_KEYS):
        absent = [k for k in ROLLOUT_KEYS if k not in arrays]
        raise ValueError(f"{path}: has rollout array {rollout[0]} but not {', '.join(absent)}")
    per_mismatch = [*HIDDEN_KEYS, *MISMATCH_KEYS, *rollout, "continuation_answer"]
    per_mismatch += ["similarity"] if "similarity" in arrays else []
    per_prompt = [*PROMPT_KEYS, "reference_answer"]
    for key in (*per_mismatch, *per_prompt):
        value = arrays[key]
        rank = 2 if key in HIDDEN_KEYS else 1
        if value.ndim != rank:
            raise ValueError(f"{path}: {key} has shape {value.shape}, expected {rank} dimension(s)")
        kind = _kind(key)
        if value.dtype.kind not in (kind + "u" if kind == "i" else kind):
            raise ValueError(f"{path}: {key} holds {value.dtype}, not {_KINDS[kind]}")
    _same_length(path, "mismatch", {k: arrays[k] for k in per_mismatch})
    _same_length(path, "prompt", {k: arrays[k] for k in per_prompt})
    for key in (k for k in FLAG_KEYS if k in arrays):
        bad = arrays[key][(arrays[key] != 0) & (arrays[key] != 1)]
        if bad.size:
            raise ValueError(f"{path}: {key} must hold 0 or 1, found {bad[0]}")


def _same_length(path: Path, what: str, arrays: Mapping[str, np.ndarray[Any, Any]]) -> None:
    """Every array of ``arrays`` has one entry (row) per ``what``."""
    by_length: dict[int, list[str]] = {}
    for key, value in arrays.items():
        by_length.setdefault(int(value.shape[0]), []).append(key)
    if len(by_length) > 1:
        parts = "; ".join(f"{n} in {', '.join(keys)}" for n, keys in sorted(by_length.items()))
        raise ValueError(
            f"{path}: the {what} arrays need one entry per {what}, but their lengths differ "
            f"({parts})"
        )
