"""Shipped verification-latency samples: one real ``edgespec profile`` run, its timed batches
and their provenance, small enough to ship under ``edgespec/data/hardware/measured/``.

A samples file is JSON: ``format`` (:data:`FORMAT`), ``command`` (the profile that measured
them), ``target``, ``machine`` (CPU, cores, memory, torch and its threads), ``measured_on``
(the date), ``code`` (the edgespec version that measured, where recorded), ``grid`` (what
was measured, in words), and ``samples`` in the layout of ``edgespec profile``'s
``NAME-report.json`` (one object per timed run: ``config``, ``category``, ``split``,
``run``, ``entries`` as ``[[L_new, L_cached], ...]``, ``time_s``), so
:func:`edgespec.profiling.residuals.points` reads either file. A report's fits and load
average are left out: the reader refits, and a load average describes a moment, not the
machine. ``edgespec reproduce wisp-estimator --samples REPORT --save-samples FILE --machine
TEXT`` writes one from a report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from edgespec.config import read_text
from edgespec.errors import UserInputError
from edgespec.output_paths import write_text_atomically
from edgespec.profiling.report_file import SAMPLES_FORMAT
from edgespec.profiling.residuals import Point, points

FORMAT = SAMPLES_FORMAT
SHIPPED = "gemma3-270m-cpu.json"
"""The bundled samples (``edgespec/data/hardware/measured/``): Gemma 3 270M on a 2-core CPU."""
_FIELDS = ("command", "target", "machine", "measured_on", "code", "grid")


@dataclass(frozen=True, slots=True)
class MeasuredSamples:
    """A profile's timed batches, reduced to one point per configuration (its median run,
    as the fit uses), with the run-to-run spread and where they come from."""

    command: str
    target: str
    machine: str
    measured_on: str
    code: str
    grid: str
    points: tuple[Point, ...]
    num_runs: int
    spread_pct: float
    """Median over configurations of (slowest − fastest run) / median run, in percent."""
    source: str
    """The file read, as shown in reports (the bundled name, or the path given)."""


def shipped_path() -> Path:
    return Path(str(resources.files("edgespec") / "data" / "hardware" / "measured" / SHIPPED))


def run_spread_pct(samples: Sequence[dict[str, Any]]) -> float:
    """Median over configurations with ≥ 2 runs of (max − min) / median time, in percent;
    0 when no configuration was timed twice."""
    by_config: dict[int, list[float]] = {}
    for s in samples:
        by_config.setdefault(int(s["config"]), []).append(float(s["time_s"]))
    spreads = []
    for times in by_config.values():
        if len(times) > 1:
            ordered = sorted(times)
            spreads.append((ordered[-1] - ordered[0]) / ordered[(len(ordered) - 1) // 2])
    if not spreads:
        return 0.0
    spreads.sort()
    middle = len(spreads) // 2
    value = spreads[middle] if len(spreads) % 2 else (spreads[middle - 1] + spreads[middle]) / 2
    return 100.0 * value


def from_document(doc: dict[str, Any], source: str) -> MeasuredSamples:
    """A samples file's (or a ``NAME-report.json``'s) contents; a report lacks the
    provenance fields a samples file has, which then read ``not recorded``."""
    if not isinstance(doc.get("samples"), list) or not doc["samples"]:
        raise UserInputError(f"{source}: no 'samples' list (not a profile report or samples file)")
    pts = tuple(points(doc))
    splits = {p.split for p in pts}
    if not {"train", "test"} <= splits:
        raise UserInputError(f"{source}: needs 'train' and 'test' configurations, has {splits}")
    fields = {k: str(doc.get(k, "not recorded")) for k in _FIELDS}
    if "machine" not in doc and "hardware" in doc:
        fields["machine"] = str(doc["hardware"])
    runs = max(int(s["run"]) for s in doc["samples"]) + 1
    return MeasuredSamples(
        **fields,
        points=pts,
        num_runs=runs,
        spread_pct=run_spread_pct(doc["samples"]),
        source=source,
    )


def load_samples(path: Path | None = None) -> MeasuredSamples:
    """The samples in ``path`` (a samples file or a profile's ``NAME-report.json``); the
    bundled ones when ``None``."""
    if path is None:
        return from_document(json.loads(shipped_path().read_text()), f"bundled {SHIPPED}")
    if not path.is_file():
        raise UserInputError(f"{path}: no such samples file")
    text = read_text(path, "samples file")  # not UTF-8: one line naming the file
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from exc
    if not isinstance(doc, dict):
        raise UserInputError(f"{path}: not a JSON object (a profile report or samples file)")
    return from_document(doc, str(path))


def samples_document(
    report: dict[str, Any], machine: str, measured_on: str, code: str = "not recorded"
) -> dict[str, Any]:
    """A samples file's contents from an ``edgespec profile`` report (see the module
    docstring): its command, target and samples, the machine, date and code given."""
    keep = ("config", "category", "split", "run", "entries", "time_s")
    return {
        "format": FORMAT,
        "command": report["command"],
        "target": report["target"],
        "machine": machine,
        "measured_on": measured_on,
        "code": code,
        "grid": grid_words(report),
        "samples": [{k: s[k] for k in keep} for s in report["samples"]],
    }


def grid_words(report: dict[str, Any]) -> str:
    """How many configurations of which category, per split, and timed runs each."""
    counts: dict[tuple[str, str], int] = {}
    runs: dict[int, int] = {}
    for s in report["samples"]:
        runs[int(s["config"])] = runs.get(int(s["config"]), 0) + 1
        if int(s["run"]) == 0:
            key = (str(s["split"]), str(s["category"]))
            counts[key] = counts.get(key, 0) + 1
    parts = []
    for split in ("train", "test"):
        cats = {c: n for (sp, c), n in sorted(counts.items()) if sp == split}
        listed = ", ".join(f"{n} {c}" for c, n in cats.items())
        parts.append(f"{split} {sum(cats.values())} ({listed})")
    per_config = sorted(set(runs.values()))
    return "; ".join(parts) + f"; {'/'.join(map(str, per_config))} timed runs per configuration"


def write_document(doc: dict[str, Any], out: Path) -> None:
    """One sample per line: small, and a diff shows which samples changed."""
    head = {k: v for k, v in doc.items() if k != "samples"}
    lines = [json.dumps(head, ensure_ascii=False)[:-1] + ', "samples": [']
    body = [json.dumps(s, separators=(",", ":")) for s in doc["samples"]]
    lines += [line + "," for line in body[:-1]] + body[-1:] + ["]}"]
    write_text_atomically(out, "\n".join(lines) + "\n")
