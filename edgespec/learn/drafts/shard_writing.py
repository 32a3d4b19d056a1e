"""Distillation shards written one batch at a time: ``shard_00012.pt`` holds batch 12, each
shard whole or not at all (:func:`~edgespec.output_paths.write_atomically`), so that a
present shard is a finished batch and a rerun writes exactly the missing ones. Temporary
files left by a run killed outright (or by an older version, ``shard_00012.tmp``) are
never read as shards, and are removed when a run starts in that folder."""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgespec.output_paths import temporary_of, write_atomically

SHARD_NAME = re.compile(r"shard_\d{5,}\.pt")
OLD_TEMPORARY = re.compile(r"shard_\d{5,}\.tmp")
"""An older version's temporary file of a shard (its writer is gone)."""


def write_shards(
    out_dir: Path,
    num_batches: int,
    make_batch: Callable[[int], dict[str, Any]],
    progress: Callable[[int, int, float], None] | None = None,
    deadline_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Write ``make_batch(i)`` to ``out_dir/shard_{i:05d}.pt`` for every batch whose shard is
    missing (resume), each whole or not at all; returns batches done. A present shard is
    whole; the temporary files of runs that were killed outright are removed first
    (:func:`remove_leftover_temporaries`). ``deadline_s`` (a ``clock()`` value) stops
    cleanly after the batch that crosses it; ``progress`` gets each batch written, of how
    many, and its seconds by ``clock``."""
    import torch

    out_dir.mkdir(parents=True, exist_ok=True)
    remove_leftover_temporaries(out_dir)
    done = 0
    for index in range(num_batches):
        shard = out_dir / f"shard_{index:05d}.pt"
        if shard.is_file():
            done += 1
            continue
        if deadline_s is not None and clock() > deadline_s:
            break
        start = clock()
        write_atomically(shard, functools.partial(torch.save, make_batch(index)))
        done += 1
        if progress is not None:
            progress(index + 1, num_batches, clock() - start)
    return done


def remove_leftover_temporaries(out_dir: Path) -> list[Path]:
    """Remove the shard temporary files in ``out_dir`` whose writer is gone (an older
    version's, or one of a process that no longer runs; a live process's is its
    shard in the making) and return them. They are never read as shards either way."""
    removed = [path for path in sorted(out_dir.iterdir()) if path.is_file() and _left_over(path)]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def _left_over(path: Path) -> bool:
    """An older version's shard temporary, or a shard's (``.shard_00012.pt.PID.tmp``,
    :func:`~edgespec.output_paths.temporary_of`) whose writer no longer runs."""
    if OLD_TEMPORARY.fullmatch(path.name) is not None:
        return True
    temporary = temporary_of(path)
    if temporary is None or SHARD_NAME.fullmatch(temporary[0]) is None:
        return False
    return not process_runs(temporary[1])


def process_runs(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user's counts)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)  # signal 0: only checked, nothing sent
    except (ProcessLookupError, OverflowError):  # none, or no process id at all
        return False
    except PermissionError:
        return True
    return True
