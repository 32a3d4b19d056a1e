"""A sweep's finished points, kept while it runs, so that a sweep stopped (Ctrl-C, SIGTERM,
one point's failure) and run again resumes them instead of starting over.

Each point's metrics are written, whole (a temporary file renamed), as soon as it finishes,
into a folder of the sweep's own (:meth:`KeptPoints.for_sweep`): named by a SHA-256 of the
base scenario, the grid and this package's files (code and bundled data), so only the same
sweep by the same code finds it; the same command, whatever its ``--out``, ``--workers`` or
engine, reruns only the points left. A simulation is a function of its scenario (its seed
included), so a kept point's metrics are the ones its run would give again; a file the
scenario reads (a trace) is the user's to keep unchanged between the two. The folder is
removed once the sweep's points are all done.

The metrics are pickled: the folder is in this user's own cache (``$EDGESPEC_CACHE`` or
``~/.cache/edgespec``, ``sweeps/``; ``$EDGESPEC_SWEEPS_CACHE`` elsewhere), written by no
one else; an entry that cannot be read is run again. One run of a sweep at a time: two
identical sweeps at once share the folder. A stopped sweep's folder not used for
:data:`KEPT_FOR_S` is removed when a sweep starts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.metrics.types import SystemMetrics
from edgespec.output_paths import write_atomically

KEPT_FOR_S = 7 * 24 * 3600.0
"""How long a stopped sweep's points are kept unused: a sweep's start removes older ones
(:func:`prune`)."""

PACKAGE = Path(__file__).resolve().parents[1]
"""This package's folder: its files name the code that ran the points."""


def package_digest(root: Path = PACKAGE) -> str:
    """A SHA-256 of every file under ``root`` (but compiled bytecode), names and bytes:
    any change to the code or to bundled data makes another sweep's folder (50 ms)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def sweep_key(base: Mapping[str, Any], grid: Mapping[str, Sequence[Any]], code: str) -> str:
    """The name of the sweep's folder: a SHA-256 of its base scenario, grid and ``code``."""
    text = json.dumps({"base": base, "grid": grid, "code": code}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class KeptPoints:
    """The finished points of one sweep, ``folder/point-N.pickle`` (N from 0)."""

    folder: Path

    @classmethod
    def for_sweep(
        cls, root: Path, base: Mapping[str, Any], grid: Mapping[str, Sequence[Any]]
    ) -> KeptPoints:
        """The folder under ``root`` of the sweep of ``grid`` over ``base`` by this code."""
        return cls(root / sweep_key(base, grid, package_digest()))

    def _path(self, index: int) -> Path:
        return self.folder / f"point-{index}.pickle"

    def kept(self, num_points: int) -> dict[int, SystemMetrics]:
        """The points of ``range(num_points)`` kept by an earlier run of this sweep."""
        found: dict[int, SystemMetrics] = {}
        for index in range(num_points) if self.folder.is_dir() else ():
            try:
                metrics = pickle.loads(self._path(index).read_bytes())
            except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
                continue
            if isinstance(metrics, SystemMetrics):
                found[index] = metrics
        return found

    def keep(self, index: int, metrics: SystemMetrics) -> None:
        """Keep point ``index``'s metrics, whole or not at all."""
        self.folder.mkdir(parents=True, exist_ok=True)
        data = pickle.dumps(metrics)
        write_atomically(self._path(index), lambda fh: fh.write(data))

    def remove(self) -> None:
        """Remove the folder (the sweep is done)."""
        shutil.rmtree(self.folder, ignore_errors=True)


def sweeps_cache() -> Path:
    """Where stopped sweeps keep their points: ``$EDGESPEC_SWEEPS_CACHE``, else
    ``$EDGESPEC_CACHE/sweeps`` (default ``~/.cache/edgespec/sweeps``)."""
    if folder := os.environ.get("EDGESPEC_SWEEPS_CACHE"):
        return Path(folder)
    # as models.gemma_cache.cache_dir, which the simulator may not import (it imports torch)
    root = os.environ.get("EDGESPEC_CACHE", str(Path.home() / ".cache" / "edgespec"))
    return Path(root) / "sweeps"


def prune(root: Path, now_s: float, max_age_s: float = KEPT_FOR_S) -> None:
    """Remove the folders under ``root`` of sweeps last written more than ``max_age_s``
    before ``now_s`` (a sweep stopped and never run again: its scenario changed)."""
    for folder in root.iterdir() if root.is_dir() else ():
        with contextlib.suppress(OSError):
            if folder.is_dir() and now_s - folder.stat().st_mtime > max_age_s:
                shutil.rmtree(folder, ignore_errors=True)
