"""Where a command writes, checked when its flags are parsed: argparse value types for an
output folder (``--out DIR``) and an output file (``--json FILE``), so that a path that
cannot be written is a usage error naming the flag before any work starts, not an
``OSError`` after it. Nothing is created here: the command makes what is missing when it
writes."""

from __future__ import annotations

import argparse
from pathlib import Path


def output_folder(text: str) -> Path:
    """A folder to write into: it may exist (as a folder) or not; a file at the path, or a
    file where one of its parent folders would be, is refused."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    _check_parents(path, text)
    return path


def output_file(text: str) -> Path:
    """A file to write: it may exist (it is replaced) or not; a folder at the path, or a
    file where one of its parent folders would be, is refused."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    _check_parents(path, text)
    return path


def _check_parents(path: Path, text: str) -> None:
    """The nearest existing parent of ``path`` must be a folder."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(f"{text}: {parent} is a file, not a folder")
            return
