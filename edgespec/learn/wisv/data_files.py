"""``edgespec train wisv``'s ``--data`` files as a set: each given once (however named, or
a byte-identical copy: its mismatches would count twice) and all captured with one target."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from edgespec.errors import UserInputError

if TYPE_CHECKING:
    from edgespec.learn.wisv.dataset import WisvDataset


def check_given_once(paths: Sequence[Path]) -> None:
    """No file given twice (however named: the same resolved path; or a byte-identical
    copy), which would count its mismatches twice; the second naming of it is refused."""
    by_path: dict[Path, Path] = {}
    by_bytes: dict[str, Path] = {}
    for path in paths:
        same, digest = by_path.get(path.resolve()), _digest(path)
        copy = None if digest is None else by_bytes.get(digest)
        if same is not None:
            again = "given twice" if same == path else f"the same file as --data {same}"
        elif copy is not None:
            again = f"a copy of --data {copy}"
        else:
            by_path[path.resolve()] = path
            by_bytes.update({} if digest is None else {digest: path})
            continue
        raise UserInputError(
            f"--data {path}: {again}; give each file once (its mismatches would count twice)"
        )


def _digest(path: Path) -> str | None:
    """The SHA-256 of file ``path``'s bytes (``None``: not a readable file; said later)."""
    try:
        with path.open("rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()
    except OSError:
        return None


def check_one_target(paths: Sequence[Path], parts: Sequence[WisvDataset]) -> None:
    """Every file captured with one target (``meta.target``): a head is trained on one
    target's hidden states, and files of two targets of one hidden size would mix."""
    first = parts[0].meta.get("target")
    for path, part in zip(paths[1:], parts[1:], strict=True):
        target = part.meta.get("target")
        if target != first:
            shown = " and ".join("none recorded" if t is None else repr(t) for t in (first, target))
            raise UserInputError(
                f"--data {paths[0]} and --data {path} were captured with different targets "
                f"({shown}); a head is trained for one target: give files of one"
            )
