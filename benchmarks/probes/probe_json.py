"""The probes' ``--json PATH``: one record per run, written atomically (not a probe itself).

A record holds the command line that ran (as the docs quote it), the host (the CPU model
from ``/proc/cpuinfo`` and whether it has AVX-512, the torch version, torch's threads) and
the probe's ``results``: every number it prints. It is written to a temporary file in
PATH's folder and renamed over PATH, so a run that fails or is killed leaves the old file
or none, never a part of one. PATH's folder is checked when the arguments are parsed,
before the run, not after it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True, slots=True)
class Host:
    """Where a probe ran: what its timings depend on besides the code."""

    cpu: str
    torch_version: str
    num_threads: int


def cpu_model(cpuinfo: str) -> str:
    """The first ``model name`` of ``/proc/cpuinfo``'s text and whether its ``flags`` name
    AVX-512 (``avx512f``); ``unknown`` where it names no model."""
    lines = cpuinfo.splitlines()
    name = next((x.partition(":")[2].strip() for x in lines if x.startswith("model name")), "")
    flags = next((x.partition(":")[2].split() for x in lines if x.startswith("flags")), [])
    return f"{name or 'unknown'}, {'with' if 'avx512f' in flags else 'without'} AVX-512"


def this_host(num_threads: int | None = None) -> Host:
    """This machine, with torch's thread count as the probe has set it, or
    ``num_threads``: the measured processes' own (a probe that measures in children)."""
    import torch

    text = CPUINFO.read_text(encoding="utf-8") if CPUINFO.is_file() else ""
    threads = torch.get_num_threads() if num_threads is None else num_threads
    return Host(cpu_model(text), str(torch.__version__), threads)


def command_line(script: str, argv: Sequence[str]) -> str:
    """The command as the docs quote it: ``python benchmarks/probes/SCRIPT ARGS...``."""
    return shlex.join(["python", f"benchmarks/probes/{script}", *argv])


def probe_record(command: str, host: Host, results: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object of one run."""
    return {
        "command": command,
        "cpu": host.cpu,
        "torch": host.torch_version,
        "threads": host.num_threads,
        "results": dict(results),
    }


def write_json(path: Path, record: Mapping[str, Any]) -> None:
    """``record`` as indented JSON at ``path``, whole or not at all (NaN is refused)."""
    text = json.dumps(record, indent=1, allow_nan=False) + "\n"
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def json_path(text: str) -> Path:
    """argparse type of ``--json``: a file path whose folder exists."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"folder {path.parent} of {text} does not exist")
    return path


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def int_list(text: str) -> list[int]:
    """argparse type: comma-separated integers >= 1, such as ``1,5``."""
    try:
        return [positive_int(part) for part in text.split(",")]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers >= 1, got {text!r}"
        ) from None


def add_json_option(parser: argparse.ArgumentParser) -> None:
    """``--json PATH``: where the run's record goes (by default none is written)."""
    parser.add_argument(
        "--json",
        type=json_path,
        metavar="PATH",
        help="also write the results as JSON to PATH (command, host, every printed number)",
    )


def finish(
    path: Path | None,
    script: str,
    argv: Sequence[str],
    results: Mapping[str, Any],
    num_threads: int | None = None,
) -> None:
    """Writes the run's record to ``path`` when given (``--json``); ``num_threads``: the
    threads of the processes measured, where they are children that set their own."""
    if path is not None:
        host = this_host(num_threads)
        write_json(path, probe_record(command_line(script, argv), host, results))
