"""Where a command writes, checked when its flags are parsed: argparse value types for an
output folder (``--out DIR``: :func:`writable_output_folder`) and an output file (``--json
FILE``: :func:`output_file`), so that a path that cannot be written is a usage error naming
the flag before any work starts, not an ``OSError`` after it (both write and remove a file
in the folder, or in its nearest existing parent while it does not exist:
:func:`check_writable`; :func:`output_folder` checks the path only, for ``edgespec sim``,
which makes and checks its run folder itself before any run); :func:`claim_folder`, a
run's folder claimed before it starts so that an earlier run's files are never mixed with
its own (a folder named by ``--out`` is not created there: the command makes what is
missing when it writes; a new default folder is made when claimed, :func:`reserve_folder`,
so that two runs started in one second never share it); and
:func:`write_atomically`, how a command writes a file so that it is never left
half-written."""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from edgespec.errors import UserInputError

MAX_NAMED = 8
"""How many of an earlier run's files a refusal names (then "and N more")."""

OVERWRITE_NEEDS_OUT = "--overwrite needs --out (a new runs/<name>-<time> holds no run)"
"""Every command's refusal of ``--overwrite`` without ``--out`` (:func:`claim_folder`)."""


def output_folder(text: str) -> Path:
    """A folder to write into: it may exist (as a folder) or not; a file at the path, or a
    file where one of its parent folders would be, is refused, and so are an empty path
    (which would be this folder) and one that is not UTF-8 (record files' writers need
    UTF-8 paths). Nothing is written: a command's ``--out`` is
    :func:`writable_output_folder`; this alone is ``edgespec sim``'s, whose run folder is
    made and checked before its first run (:func:`edgespec.sim.run_folder.made_run_folder`,
    which says which folder it could not make or write)."""
    if not text:
        raise argparse.ArgumentTypeError("must not be empty (give . for this folder)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(text).decode("utf-8", "backslashreplace")
        raise argparse.ArgumentTypeError(f"{shown} is not valid UTF-8; give a UTF-8 path") from None
    path = Path(text)
    with _unusable_path(text):
        if path.exists() and not path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
        _check_parents(path, text)
    return path


def writable_output_folder(text: str) -> Path:
    """:func:`output_folder`, and the folder (or, while it does not exist, its nearest
    existing parent) must also take a file now: every command's ``--out DIR``, so that one
    that cannot be written fails before the work, not after it."""
    path = output_folder(text)
    with _unusable_path(text):
        _check_writable_at(path if path.is_dir() else _check_parents(path, text), text)
    return path


def output_file(text: str) -> Path:
    """A file to write: it may exist (it is replaced) or not; a folder at the path, or a
    file where one of its parent folders would be, is refused, and so is a folder that
    cannot take a file now (its nearest existing parent folder: :func:`check_writable`)."""
    path = Path(text)
    if not text.strip():  # Path("") is ".", a folder
        raise argparse.ArgumentTypeError("must not be empty: give a file name")
    with _unusable_path(text):
        if path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
        _check_writable_at(_check_parents(path, text), text)
    return path


def check_distinct_outputs(*outputs: tuple[str, Path | None]) -> None:
    """Every (flag, path) output given (``None``: not given) at a path of its own, else a
    :class:`UserInputError` naming both flags: the second written would replace the first
    (``--json`` at ``--profile``'s file replaced the profile, exit 0)."""
    taken: dict[Path, str] = {}
    for flag, path in outputs:
        if path is None:
            continue
        if (other := taken.get(path.resolve())) is not None:
            raise UserInputError(f"{flag} {path} is also {other}'s file: the second would "
                                 "replace the first; give another")  # fmt: skip
        taken[path.resolve()] = flag


def check_writable(folder: Path) -> None:
    """Create a temporary file in ``folder`` and remove it again: an ``OSError`` saying why
    when a file cannot be written there (a read-only file system, /proc, no permission), so
    that a command fails before its work, not when it writes. Nothing is left behind."""
    with tempfile.TemporaryFile(dir=folder, prefix=".write-check-"):
        pass


def _check_writable_at(folder: Path, text: str) -> None:
    try:
        check_writable(folder)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise argparse.ArgumentTypeError(f"{text}: cannot write in {folder}: {reason}") from None


@contextmanager
def _unusable_path(text: str) -> Iterator[None]:
    """A path the system cannot even look up (a name over the file system's limit, too
    many links) refused in one line, not a traceback from inside the argument's check."""
    try:
        yield
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc.strerror or exc}") from None


def _check_parents(path: Path, text: str) -> Path:
    """The nearest existing parent of ``path``, which must be a folder."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(f"{text}: {parent} is a file, not a folder")
            return parent
    return Path.cwd()  # a relative path's parents end at ".", which exists


def claim_folder(
    out: Path | None,
    default: Path,
    run_files: Sequence[str],
    overwrite: bool,
    keep: Sequence[Path] = (),
    remove: bool = True,
    recorded: Sequence[str] = (),
) -> Path:
    """The folder a run writes, so that it holds one run's files and no other's: ``out``
    when it holds none of ``run_files`` (names or glob patterns, relative to it) nor of
    ``recorded`` (another run's, which the folder records and this run replaces too) — with
    ``overwrite``, those files are removed now, and then the subfolders that removing them
    left empty, but for ``keep`` (inputs of this run; ``remove=False``: only checked, for a
    command that refuses more before it starts and calls again to remove them); without
    ``out``, ``default``, or ``default-2``, ``-3`` ... when taken, made now
    (:func:`reserve_folder`), and ``overwrite`` is refused (a new folder holds no run to
    replace). A path of ``run_files`` that this run could not write is refused first,
    whatever ``overwrite`` says (:func:`check_run_paths`). Other files are never touched;
    ``out`` is not created here (the run makes it when it writes)."""
    if out is None:
        if overwrite:
            raise UserInputError(OVERWRITE_NEEDS_OUT)
        return reserve_folder(default)
    check_run_paths(out, run_files)
    kept = {path.resolve() for path in keep}
    patterns = (*run_files, *recorded)
    matched = {path for pattern in patterns for path in out.glob(pattern)} if out.is_dir() else ()
    found = sorted(path for path in matched if path.is_file() and path.resolve() not in kept)
    if found and not overwrite:
        shown = shown_names([str(path.relative_to(out)) for path in found])
        raise UserInputError(
            f"--out {out} already holds a run ({shown}); give another folder, or --overwrite "
            "to replace that run's files"
        )
    if remove:
        _remove(out, found)
    return out


def reserve_folder(default: Path) -> Path:
    """``default``, or ``default-2``, ``-3`` ... while taken, made by an exclusive
    ``mkdir`` (its parents as needed), so that no other run (another process claiming in
    the same second) gets the same folder. A command that fails before it writes there
    removes it again while empty
    (:func:`~edgespec.sim.run_folder.made_run_folder` with ``claimed``)."""
    names = numbered(default)
    folder = next(names)
    for _ in range(10_000):
        try:
            default.parent.mkdir(parents=True, exist_ok=True)
            folder.mkdir()
            return folder
        except FileExistsError:
            folder = next(names)
        except FileNotFoundError:  # the parent removed meanwhile (another run's, failing)
            continue
        except OSError as exc:
            raise UserInputError(
                f"cannot create the run folder {folder}: {exc.strerror or exc}"
            ) from None
    raise UserInputError(f"cannot create the run folder {folder}: every name up to it is taken")


def numbered(default: Path) -> Iterator[Path]:
    """``default``, then ``default-2``, ``-3`` ...: a new run folder's names in turn."""
    yield default
    for count in itertools.count(2):
        yield default.with_name(f"{default.name}-{count}")


def _remove(out: Path, files: Sequence[Path]) -> None:
    """Remove ``files``, then each subfolder of ``out`` that removing them left empty."""
    for path in files:
        path.unlink()
    for folder in sorted({path.parent for path in files if path.parent != out}, reverse=True):
        with suppress(OSError):  # not empty: a file no run wrote is in it
            folder.rmdir()


def check_run_paths(out: Path, run_files: Sequence[str]) -> None:
    """Refuse, naming it, a path of ``run_files`` in ``out`` that the run could not write: a
    folder where it writes a file (a name, or a match of a pattern), a file where it makes
    a folder, or a folder it writes into that cannot take a file
    (:func:`check_writable`)."""
    for pattern in run_files:
        inside = out / Path(pattern).parent
        if inside != out and inside.exists() and not inside.is_dir():
            raise UserInputError(
                f"--out {out}: {inside} is a file where this run makes a folder; move it or "
                "give another folder"
            )
        if inside != out and inside.is_dir():
            try:
                check_writable(inside)
            except OSError as exc:
                raise UserInputError(
                    f"--out {out}: cannot write in {inside}: {exc.strerror or exc}"
                ) from None
        for path in sorted(out.glob(pattern)) if out.is_dir() else ():
            if path.is_dir() and not path.is_symlink():
                raise UserInputError(
                    f"--out {out}: {path} is a folder where this run writes a file; move it "
                    "or give another folder"
                )


def shown_names(names: Sequence[str], at_most: int = MAX_NAMED) -> str:
    """``a, b, c``: at most ``at_most`` names, then "and N more"."""
    more = len(names) - at_most
    return ", ".join(names[:at_most]) + (f" and {more} more" if more > 0 else "")


def temporary_path(path: Path) -> Path:
    """Where ``path`` is written until it is whole (``.NAME.PID.tmp`` beside it, so that
    the rename is atomic)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def temporary_of(temporary: Path) -> tuple[str, int] | None:
    """The file name and writer's process id a :func:`temporary_path` stands for
    (``.NAME.PID.tmp`` → NAME, PID), ``None`` for any other name."""
    stem, dot, suffix = temporary.name.removeprefix(".").rpartition(".")
    name, _, pid = stem.rpartition(".")
    if not (temporary.name.startswith(".") and dot and suffix == "tmp" and name and pid.isdigit()):
        return None
    return name, int(pid)


def write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` whole or not at all: ``write`` fills a temporary file beside it (in the
    same folder, so that the rename is atomic), which then replaces ``path``. A run stopped
    or failing part-way leaves ``path`` as it was and no temporary file behind; an
    ``OSError`` that names no file (a full disk) is raised again naming ``path``. The folder
    must exist."""
    temporary = temporary_path(path)
    try:
        with temporary.open("wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, path)
    except OSError as exc:  # a full disk names no file: name the one being written
        temporary.unlink(missing_ok=True)
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_text_atomically(path: Path, text: str) -> None:
    """:func:`write_atomically` of ``text`` in UTF-8."""
    write_atomically(path, lambda fh: fh.write(text.encode("utf-8")))


def readable_like(paths: Iterable[Path], written: Path) -> None:
    """Give ``paths`` the permission bits of ``written``, a file this process made with
    ``open()`` (so under its umask): safetensors writes its weights 0600 whatever the umask,
    and a draft trained by one user could not be loaded by a server running as another."""
    mode = written.stat().st_mode & 0o777
    for path in paths:
        path.chmod(mode)
