"""The run folder of a claims reproduction: which paper's run a folder records (its
results.json's :data:`RECORD_KEY`, its REPORT.md's command line: :func:`recorded`), and
claiming it for a paper (:func:`claim_reproduction_folder`). A folder holding files this
paper writes is refused, naming them; with ``--overwrite`` they are removed, and another
paper's only where the folder records that paper's run, never any other file, and the
files it keeps are named. A file a paper declares by a pattern (``scenarios/*.yaml``) is
the run's only when it carries :data:`SCENARIO_MARK` (:func:`owned_files`): a scenario of
the user's own in ``scenarios/`` is neither refused nor removed. A run that fails or is
interrupted before its results.json leaves none of its files behind
(:func:`incomplete_run_removed`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from edgespec.output_paths import check_run_paths, claim_folder, shown_names
from edgespec.sim.run_folder import made_run_folder

RECORD_KEY = "reproduction"
"""results.json's key naming the reproduction that wrote it (``"dsd"``)."""
REPORT_COMMAND = "Command: `edgespec reproduce "
"""How REPORT.md's command line starts (:func:`edgespec.reproduce.report_file.write_report`)."""
MAX_REPORT_HEAD_BYTES = 4096
"""How much of a REPORT.md is read for its command line (its third line)."""
SCENARIO_MARK = "# written by edgespec reproduce: a scenario of its run (--overwrite replaces it)\n"
"""The first line of every scenario file a reproduction writes
(:func:`edgespec.reproduce.jobs.write_scenario`): a ``.yaml`` matched by a declared
pattern is the run's only when it starts so."""
MAX_RESULTS_BYTES = 64 * 2**20
"""The largest results.json read for its :data:`RECORD_KEY` (a larger one names no run)."""


def results_text(name: str, data: Mapping[str, Any]) -> str:
    """results.json's text: ``data``, after :data:`RECORD_KEY` naming reproduction ``name``
    (so that a later ``--overwrite`` knows whose files the folder holds)."""
    return json.dumps({RECORD_KEY: name, **data}, indent=2) + "\n"


def recorded(out: Path, names: Sequence[str]) -> list[str]:
    """Which of the reproductions ``names`` the folder ``out`` records a run of: the one its
    results.json names (:data:`RECORD_KEY`) and the one its REPORT.md's command line names,
    in ``names``' order; a file that is missing, too large or unreadable names none."""
    found = {_results_name(out / "results.json"), _report_name(out / "REPORT.md")}
    return [name for name in names if name in found]


def _report_name(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            head = fh.read(MAX_REPORT_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
    for line in head.splitlines():
        if line.startswith(REPORT_COMMAND):
            return line.removeprefix(REPORT_COMMAND).split(" ")[0].rstrip("`")
    return ""


def _results_name(path: Path) -> str:
    try:
        if not path.is_file() or path.stat().st_size > MAX_RESULTS_BYTES:
            return ""
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return ""
    name = data.get(RECORD_KEY) if isinstance(data, dict) else None
    return name if isinstance(name, str) else ""


def claim_reproduction_folder(
    name: str,
    out: Path | None,
    default: Path,
    declared: Mapping[str, Sequence[str]],
    overwrite: bool,
) -> tuple[Path, str]:
    """The folder reproduction ``name`` writes (:func:`~edgespec.output_paths.claim_folder`
    on its ``declared`` files, and on another reproduction's where ``out`` records its run),
    and, where ``overwrite`` removed or kept files, one line saying which (else empty)."""
    others = [other for other in recorded(out, list(declared)) if other != name] if out else []
    before = _listed(out, declared) if out is not None and overwrite else []
    if out is not None:
        check_run_paths(out, declared[name])
        extra = [path for other in others for path in owned_files(out, declared[other])]
        folder = claim_folder(out, default, owned_files(out, declared[name]), overwrite,
                              recorded=extra)  # fmt: skip
    else:
        folder = claim_folder(out, default, declared[name], overwrite)
    if not before:
        return folder, ""
    kept = _listed(folder, declared)
    removed = [path for path in before if path not in kept]
    said = [f"removed {shown_names(removed)}"] if removed else []
    said += [f"kept {shown_names(kept)} (no run recorded in {folder} wrote them)"] if kept else []
    return folder, "--overwrite: " + "; ".join(said)


def owned_files(out: Path, patterns: Sequence[str]) -> list[str]:
    """The files of ``patterns`` (names or glob patterns, relative to ``out``) in ``out``
    that a reproduction wrote, relative to it: every named one, and of a pattern's matches
    those that are no ``.yaml`` or start with :data:`SCENARIO_MARK`."""
    owned = set()
    for pattern in patterns:
        if not any(char in pattern for char in "*?["):
            owned.update([pattern] if (out / pattern).is_file() else [])
            continue
        for path in out.glob(pattern) if out.is_dir() else ():
            if path.is_file() and (path.suffix != ".yaml" or _marked(path)):
                owned.add(str(path.relative_to(out)))
    return sorted(owned)


def _marked(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(len(SCENARIO_MARK.encode())) == SCENARIO_MARK.encode()
    except OSError:
        return False


def _listed(out: Path, declared: Mapping[str, Sequence[str]]) -> list[str]:
    """The files in ``out`` and in the subfolders the reproductions write into, relative to
    it."""
    inside = {Path(p).parent for patterns in declared.values() for p in patterns}
    folders = [out / sub for sub in sorted(inside)]
    return sorted(
        str(path.relative_to(out))
        for folder in folders
        if folder.is_dir()
        for path in folder.iterdir()
        if path.is_file()
    )


@contextmanager
def incomplete_run_removed(
    out: Path, files: Sequence[str], results: str = "results.json"
) -> Iterator[Path]:
    """Make ``out`` for a reproduction's run (:func:`~edgespec.sim.run_folder.made_run_folder`)
    and, when the body raises (an error, Ctrl-C, SIGTERM) before the run's ``results`` file
    (a name in ``out``: results.json, or a command's ``--out`` report) is written, remove
    the files of ``files`` (the paper's declared names or glob patterns, relative to
    ``out``) that were not there before, then the subfolders and the folders made here
    that this leaves empty: an incomplete run leaves nothing that a rerun to the same
    ``--out`` would refuse as a run. From ``results`` on, a failure keeps the runs (the
    rows can be rebuilt from them)."""
    before = _matching(out, files)
    with made_run_folder(out):
        try:
            yield out
        except BaseException:
            written = sorted(_matching(out, files) - before)
            if out / results not in written:
                for path in written:
                    path.unlink(missing_ok=True)
                folders = {p.parent for p in written if p.parent != out}
                for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
                    if folder.is_dir() and not any(folder.iterdir()):
                        folder.rmdir()
            raise


def _matching(out: Path, files: Sequence[str]) -> set[Path]:
    if not out.is_dir():
        return set()
    return {path for pattern in files for path in out.glob(pattern) if path.is_file()}
