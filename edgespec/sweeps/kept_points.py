"""A sweep's finished points, kept while it runs, so that a sweep stopped (Ctrl-C, SIGTERM,
one point's failure) and run again resumes them instead of starting over.

Each point's metrics are written, whole (a temporary file renamed), as soon as it finishes,
into a folder of the sweep's own (:meth:`KeptPoints.for_sweep`): named by a SHA-256 of the
base scenario, the grid (its keys in order: ``--sweep a=.. b=..`` numbers its points
otherwise than ``b=.. a=..``), this package's files (code and bundled data) and the folder
the command runs in (a relative path it was given names another file from another folder),
so only the same sweep by the same code from the same folder finds it; the same command
there, whatever its ``--out``, ``--workers`` or engine, reruns only the points left. A
simulation is a function of its scenario (its seed included), so a kept point's metrics are
the ones its run would give again; a file the scenario reads (a trace) is the user's to
keep unchanged between the two. The folder is
removed once the sweep's points are all done.

The metrics are pickled: the folder is in this user's own cache (``$EDGESPEC_CACHE`` or
``~/.cache/edgespec``, ``sweeps/``; ``$EDGESPEC_SWEEPS_CACHE`` elsewhere), made mode 0700
and refused, before anything in it is read, when another user could write in it
(:mod:`.private_folder`); an entry that cannot be read is run again. One run of a sweep at a time
(:meth:`KeptPoints.held`): a run holds its folder's ``lock`` file (``flock``, released when
the run ends, however it ends), and a second run of the same sweep meanwhile is refused
at once, naming the folder and the holder's process id (it would run the same points and
remove the folder under the first). A stopped sweep's folder not used for
:data:`KEPT_FOR_S` (and not held) is removed when a sweep starts.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pickle
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.bundled_gguf import cache_dir
from edgespec.errors import UserInputError
from edgespec.metrics.types import SystemMetrics
from edgespec.output_paths import write_atomically
from edgespec.sweeps.private_folder import check_private, private_folder

KEPT_FOR_S = 7 * 24 * 3600.0
"""How long a stopped sweep's points are kept unused: a sweep's start removes older ones
(:func:`prune`)."""

LOCK_FILE = "lock"
"""The file of a sweep's folder that the run using it holds locked (:meth:`KeptPoints.held`)
and writes its process id in."""

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


def sweep_key(
    base: Mapping[str, Any], grid: Mapping[str, Sequence[Any]], code: str, folder: Path
) -> str:
    """The name of the sweep's folder: a SHA-256 of its base scenario, grid (its keys in
    their order: a point's number depends on it), ``code`` and the ``folder`` the command
    runs in (the paths it was given are read against it)."""
    ordered = [[key, list(values)] for key, values in grid.items()]
    data = {"base": base, "grid": ordered, "code": code, "folder": str(folder)}
    text = json.dumps(data, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class KeptPoints:
    """The finished points of one sweep, ``folder/point-N.pickle`` (N from 0)."""

    folder: Path

    @classmethod
    def for_sweep(
        cls, root: Path, base: Mapping[str, Any], grid: Mapping[str, Sequence[Any]]
    ) -> KeptPoints:
        """The folder under ``root`` of the sweep of ``grid`` over ``base`` by this code,
        from the current folder."""
        return cls(root / sweep_key(base, grid, package_digest(), Path.cwd().resolve()))

    def _path(self, index: int) -> Path:
        return self.folder / f"point-{index}.pickle"

    def kept(self, num_points: int) -> dict[int, SystemMetrics]:
        """The points of ``range(num_points)`` kept by an earlier run of this sweep."""
        found: dict[int, SystemMetrics] = {}
        if os.path.lexists(self.folder):
            check_private(self.folder)
        for index in range(num_points) if self.folder.is_dir() else ():
            try:
                metrics = pickle.loads(self._path(index).read_bytes())
            except Exception:  # a damaged entry, whatever pickle makes of it: run again
                continue
            if isinstance(metrics, SystemMetrics):
                found[index] = metrics
        return found

    def keep(self, index: int, metrics: SystemMetrics) -> None:
        """Keep point ``index``'s metrics, whole or not at all."""
        private_folder(self.folder)
        data = pickle.dumps(metrics)
        write_atomically(self._path(index), lambda fh: fh.write(data))

    def remove(self) -> None:
        """Remove the folder (the sweep is done)."""
        shutil.rmtree(self.folder, ignore_errors=True)

    @contextlib.contextmanager
    def held(self) -> Iterator[KeptPoints]:
        """The folder, this process's alone while the block runs: its ``lock`` file locked
        (``flock``; the lock goes when the block ends or the process does, a killed run's
        too) and holding this process's id. A run of the same sweep already holding it is a
        :class:`UserInputError` naming the folder and that run's process. The folder is
        removed as the block ends if it keeps no point (its checks refused a point)."""
        fd = _locked(self.folder / LOCK_FILE)
        try:
            yield self
        finally:
            with contextlib.suppress(OSError):
                if not any(self.folder.glob("point-*.pickle")):
                    self.remove()
            os.close(fd)


def _try_lock(path: Path) -> int | None:
    """``path`` opened (made if missing) and locked, its descriptor; ``None`` when another
    holds it. ``FileNotFoundError`` when its folder is gone."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _locked(path: Path) -> int:
    """``path`` locked for this process, holding its id (:meth:`KeptPoints.held`); again
    when the file locked was removed meanwhile (the run that held it was done)."""
    while True:
        private_folder(path.parent)
        try:
            fd = _try_lock(path)
        except FileNotFoundError:  # the folder removed between the two: again
            continue
        if fd is None:
            raise UserInputError(
                f"sweep: another run of this sweep ({_holder(path)}) is using its kept points "
                f"in {path.parent}; wait for it to end, or stop it and run this command "
                "again (it runs only the points left)"
            )
        with contextlib.suppress(FileNotFoundError):
            if os.fstat(fd).st_ino == path.stat().st_ino:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                return fd
        os.close(fd)  # locked as its holder removed it: the folder's new file is the one


def _holder(path: Path) -> str:
    """The process that holds ``path``, as its lock file says (``process 1234``)."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = path.read_bytes()[:32].decode().strip()
        if text.isdigit():
            return f"process {text}"
    return "another process"


def sweeps_cache() -> Path:
    """Where stopped sweeps keep their points: ``$EDGESPEC_SWEEPS_CACHE``, else
    ``$EDGESPEC_CACHE/sweeps`` (default ``~/.cache/edgespec/sweeps``)."""
    if folder := os.environ.get("EDGESPEC_SWEEPS_CACHE"):
        return Path(folder)
    return cache_dir() / "sweeps"


def prune(root: Path, now_s: float, max_age_s: float = KEPT_FOR_S) -> None:
    """Remove the folders under ``root`` of sweeps last written more than ``max_age_s``
    before ``now_s`` (a sweep stopped and never run again: its scenario changed), but one
    that a run holds (:meth:`KeptPoints.held`)."""
    for folder in root.iterdir() if root.is_dir() else ():
        with contextlib.suppress(OSError):
            if folder.is_dir() and now_s - folder.stat().st_mtime > max_age_s:
                fd = _try_lock(folder / LOCK_FILE)  # a run holding it: not removed
                if fd is not None:
                    shutil.rmtree(folder, ignore_errors=True)
                    os.close(fd)
