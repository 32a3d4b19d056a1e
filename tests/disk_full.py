"""A disk that fills while one file is written: for the tests that each output is written
whole or not at all (``edgespec.output_paths.write_atomically``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NEEDS_PROC_FD = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="finds the file being written in /proc"
)
"""The mark of a test that uses :func:`disk_full_writing` (it reads ``/proc/self/fd``)."""


def disk_full_writing(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The disk fills as ``name`` is written (when its temporary file is synced)."""
    fsync = os.fsync

    def selective(fd: int) -> None:
        if Path(os.readlink(f"/proc/self/fd/{fd}")).name.startswith(f".{name}."):
            raise OSError(28, "No space left on device")
        fsync(fd)

    monkeypatch.setattr(os, "fsync", selective)
