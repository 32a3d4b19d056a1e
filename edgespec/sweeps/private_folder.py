"""A folder of this user's alone, for files this user's processes read back as trusted
(a stopped sweep's pickled points, :mod:`edgespec.sweeps.kept_points`): made with mode
0700, and refused, naming it, when another user owns it or may write in it, or when its
parent lets another user replace it (writable by others without the sticky bit)."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from edgespec.errors import UserInputError

_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def _refusal(folder: Path, why: str) -> UserInputError:
    return UserInputError(
        f"{folder}: {why}, so the sweep points kept there are neither read nor written "
        "(another user could plant or replace them): remove it, or set "
        "$EDGESPEC_SWEEPS_CACHE to a folder of your own"
    )


def check_private(folder: Path) -> None:
    """Refuse ``folder`` (which exists) unless it is a real folder (not a link) owned by this
    user and writable by no other, in a parent no other user may replace it in."""
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise _refusal(folder, "not a folder (a link or a file)")
    if info.st_uid != os.geteuid():
        raise _refusal(folder, f"owned by another user (uid {info.st_uid})")
    if info.st_mode & _OTHERS_WRITE:
        raise _refusal(folder, f"writable by other users (mode {stat.S_IMODE(info.st_mode):o})")
    parent = os.stat(folder.parent)
    if parent.st_mode & stat.S_IWOTH and not parent.st_mode & stat.S_ISVTX:
        raise _refusal(folder, f"in {folder.parent}, which any user may write in (no sticky bit)")


def private_folder(folder: Path) -> Path:
    """``folder``, made (mode 0700, its parents as usual) when missing, and checked
    (:func:`check_private`)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    check_private(folder)
    return folder
