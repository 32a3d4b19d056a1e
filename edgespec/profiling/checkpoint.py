"""The profile's checkpoint: measured configurations appended as they finish, so an
interrupted ``edgespec profile`` continues with ``--resume`` instead of starting over.

File format (JSON lines, ``NAME-samples.jsonl`` beside ``--out NAME.yaml``):

* line 1, the header: ``{"format": "edgespec-profile-checkpoint", "version": 1,
  "setup": {...}}`` where ``setup`` holds everything that must match for samples to be
  combined (target, grid sizes, seed, torch threads);
* then one line per measured configuration: ``{"config": i, "num_prompts": n,
  "samples": [{"run": r, "entries": [[L_new, L_cached], ...], "time_s": t}, ...]}``.

A last line cut off by a kill mid-write is ignored (that configuration is measured
again); any other malformed line is an error naming the file and line. The command deletes
the checkpoint once the profile files are written (the report holds every sample), so a
checkpoint on disk always means an unfinished profile.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from edgespec.profiling.measure import GridSpec, Sample

FORMAT = "edgespec-profile-checkpoint"
VERSION = 1


def checkpoint_path(out: Path) -> Path:
    """``DIR/NAME-samples.jsonl`` for ``--out DIR/NAME.yaml``."""
    return out.parent / f"{out.stem}-samples.jsonl"


def setup_of(
    target: str, spec: GridSpec, threads: int, device: str = "cpu", dtype: str = "float32"
) -> dict[str, Any]:
    """What must be equal for two runs' samples to belong to one profile (``device`` and
    ``dtype`` written only when not the CPU in float32, so older checkpoints still match)."""
    grid = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(spec).items()}
    if grid["clock"] == "wall":
        del grid["clock"]  # as checkpoints written before --clock existed
    setup: dict[str, Any] = {"target": target, "grid": grid, "threads": threads}
    if (device, dtype) != ("cpu", "float32"):
        setup.update(device=device, dtype=dtype)
    return setup


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The configurations measured so far: samples by configuration index, and the number
    of unique prompts their runs used."""

    samples: dict[int, tuple[Sample, ...]]
    num_prompts: int


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed (other setup, malformed line)."""


def _differences(found: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    out = []
    for key in sorted(set(found) | set(wanted)):
        a, b = found.get(key), wanted.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{key}.{d}" for d in _differences(a, b)]
        elif a != b:
            out.append(f"{key} (checkpoint {a!r}, now {b!r})")
    return out


def _sample(config: int, raw: dict[str, Any]) -> Sample:
    entries = tuple((int(n), int(c)) for n, c in raw["entries"])
    return Sample(config, int(raw["run"]), entries, float(raw["time_s"]))


def load_checkpoint(path: Path, setup: dict[str, Any]) -> Checkpoint:
    """Read ``path``; raises :class:`CheckpointError` when it was written for another setup
    or a line (other than a cut-off last one) is malformed."""
    lines = path.read_text().splitlines()
    try:
        header = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CheckpointError(f"{path}:1: not an edgespec profile checkpoint")
    if header.get("version") != VERSION:
        raise CheckpointError(f"{path}:1: checkpoint version {header.get('version')!r}")
    diff = _differences(header.get("setup", {}), setup)
    if diff:
        raise CheckpointError(
            f"{path} was written by a profile with other settings: {'; '.join(diff)}. "
            "Run with the same settings, or with --fresh to start over"
        )
    samples: dict[int, tuple[Sample, ...]] = {}
    num_prompts = 0
    for number, line in enumerate(lines[1:], start=2):
        try:
            record = json.loads(line)
            config = int(record["config"])
            samples[config] = tuple(_sample(config, s) for s in record["samples"])
            num_prompts += int(record["num_prompts"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            if number == len(lines) and not path.read_text().endswith("\n"):
                break  # cut off by a kill while being written: measure it again
            raise CheckpointError(f"{path}:{number}: malformed line ({exc})") from exc
    return Checkpoint(samples, num_prompts)


class CheckpointWriter:
    """Appends one line per measured configuration, flushed at once."""

    def __init__(self, path: Path, setup: dict[str, Any], append: bool) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text() if append and path.exists() else ""
        self._file: TextIO = path.open("a" if text else "w")
        if text and not text.endswith("\n"):  # drop a cut-off last line
            self._file.close()
            path.write_text(text[: text.rfind("\n") + 1])
            self._file = path.open("a")
        if not text:
            header = {"format": FORMAT, "version": VERSION, "setup": setup}
            self._file.write(json.dumps(header) + "\n")
            self._file.flush()

    def add(self, config: int, samples: Sequence[Sample], num_prompts: int) -> None:
        runs = [{"run": s.run, "entries": s.entries, "time_s": s.time_s} for s in samples]
        record = {"config": config, "num_prompts": num_prompts, "samples": runs}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> CheckpointWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
