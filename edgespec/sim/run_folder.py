"""The folder an ``edgespec sim`` run writes (``--out DIR``, else ``runs/<name>-<time>``),
claimed before the run starts so that it holds one run's files and no other's.

A folder named by ``--out`` that already holds files a run writes (:data:`RUN_FILES`) is
refused, naming them, unless ``--overwrite`` is given; then exactly those files are removed
first, so no plot, record file or summary of the earlier run is left beside the new one
(``--no-plots`` or a run without ``--rounds`` would otherwise keep the old ones). Other
files in the folder are never touched. The default folder is new, and made when it is
claimed, by an exclusive ``mkdir``: when two runs of one scenario start in the same second
(two processes), the second gets ``-2`` and so on, and neither can write into or remove
the other's.

:func:`made_run_folder` then makes the folder before the first run (a sweep's, a capacity
search's or a sharded run's too), so that a folder that cannot be made or written fails at
once, not after every run has finished; when the command fails, it removes what it made
(and the default folder its claim made) that is still empty, so a failed run leaves no
folder behind.

The scenario's ``name`` names that default folder, so it must be one plain folder name
(:func:`check_run_name`): the scenario checks it when it is validated, and
:func:`claim_run_folder` once more before it builds the path."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edgespec.config import ConfigError
from edgespec.errors import UserInputError
from edgespec.output_paths import check_writable, claim_folder

MAX_NAME_BYTES = 200
"""The longest scenario name (UTF-8 bytes): ``<name>-<time>-N`` stays within the 255 bytes
of a file name."""

RUN_FILES = (
    "metrics.json",
    "scenario.yaml",
    "requests.csv",
    "requests.parquet",
    "batches.parquet",
    "rounds.csv",
    "rounds.parquet",
    "attribution.json",
    "attribution.png",
    "latency_cdf.png",
    "slo_attainment.png",
    "utilization.png",
    "batch_sizes.png",
    "sweep.json",
    "sweep.csv",
    "command.json",
    "capacity.json",
    "shards.json",
    "pipeline.json",
)
"""Every file a plain, sweep, capacity, sharded or drafting-server run writes."""


def claim_run_folder(out: Path | None, name: str, overwrite: bool, stamp: str) -> Path:
    """The folder this run writes: ``out`` when it holds no earlier run's files (or
    ``overwrite``: those files removed now; nothing is created); without ``out`` a new
    ``runs/<name>-<stamp>`` (``-2``, ``-3`` ... when taken), made now
    (:func:`~edgespec.output_paths.reserve_folder`). A ``name`` that is not one plain
    folder name is refused (:func:`check_run_name`)."""
    check_run_name(name)
    return claim_folder(out, Path("runs") / f"{name}-{stamp}", RUN_FILES, overwrite)


@contextmanager
def made_run_folder(out: Path, claimed: bool = False) -> Iterator[Path]:
    """Make ``out`` (and its missing parents) and check that a file can be written in it,
    before any run: an error says which and why (``cannot create the run folder
    /sys/x: Operation not permitted``). When the body raises, the folders made here that
    are still empty are removed again, and so are ``out`` and its parent (``runs``) when
    ``claimed`` (the default folder, made by :func:`claim_run_folder`)."""
    made = [out, out.parent] if claimed else []
    for folder in () if claimed else (out, *out.parents):
        if folder.exists():
            break
        made.append(folder)
    if made:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            _remove_empty(made)
            raise UserInputError(f"cannot create the run folder {out}: {_reason(exc)}") from None
    try:
        check_writable(out)
    except OSError as exc:
        _remove_empty(made)
        raise UserInputError(f"cannot write in the run folder {out}: {_reason(exc)}") from None
    try:
        yield out
    except BaseException:
        _remove_empty(made)
        raise


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (deepest first) while they are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty, or never made
            if folder.exists():
                return


def check_run_name(name: str) -> None:
    """Refuse a scenario ``name`` that is not one plain folder name: empty (or blank), with
    ``/``, ``\\``, ``..``, a NUL or other control character, not UTF-8, or over
    :data:`MAX_NAME_BYTES` bytes (``runs/<name>-<time>`` would be written elsewhere, nested
    or not at all). The error names the field ``name`` and shows the value escaped."""
    problem = _name_problem(name)
    if problem is not None:
        raise ConfigError(
            "name", f"{problem}, got {name!r} (it names the run folder runs/<name>-<time>)"
        )


def _name_problem(name: str) -> str | None:
    if not name.strip():
        return "must not be empty"
    for part in ("/", "\\", ".."):
        if part in name:
            return f"must be one folder name, without {part!r}"
    if any(ord(char) < 32 or ord(char) == 127 for char in name):
        return "must not hold a NUL or other control character"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "must be valid UTF-8"
    if size > MAX_NAME_BYTES:
        return f"must be at most {MAX_NAME_BYTES} bytes (UTF-8), is {size}"
    return None
