"""The profile's checkpoint: measured configurations appended as they finish, so an
interrupted ``edgespec profile`` continues with ``--resume`` instead of starting over.

File format (JSON lines, ``NAME-samples.jsonl`` beside ``--out NAME.yaml``):

* line 1, the header: ``{"format": "edgespec-profile-checkpoint", "version": 1,
  "setup": {...}}`` where ``setup`` holds everything that must match for samples to be
  combined (target, grid sizes, seed, clock, torch threads, device, dtype; the clock,
  device and dtype left out at ``wall``, ``cpu`` and ``float32``, as checkpoints written
  before their flags existed left them out: :data:`OLDER_DEFAULTS`);
* then one line per measured configuration: ``{"config": i, "num_prompts": n,
  "samples": [{"run": r, "entries": [[L_new, L_cached], ...], "time_s": t}, ...]}``,
  and one per drafter batch cell timed (:mod:`edgespec.profiling.draft_checkpoint`).

A last line cut off by a kill mid-write is ignored (that configuration is measured
again); any other malformed line is an error naming the file and line. The command deletes
the checkpoint once the profile files are written (the report holds every sample), so a
checkpoint on disk always means an unfinished profile.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TextIO

from edgespec.config import as_written
from edgespec.models.registry import same_model
from edgespec.output_paths import write_text_atomically
from edgespec.profiling.draft import DraftSample
from edgespec.profiling.draft_checkpoint import (
    DraftKey,
    draft_record,
    is_draft_record,
    read_draft_record,
)
from edgespec.profiling.files import profile_files
from edgespec.profiling.grid import GridSpec, design_grid
from edgespec.profiling.measure import Sample

FORMAT = "edgespec-profile-checkpoint"
VERSION = 1


def checkpoint_path(out: Path) -> Path:
    """``DIR/NAME-samples.jsonl`` for ``--out DIR/NAME.yaml`` (:func:`profile_files`)."""
    return profile_files(out).samples


def num_measured(path: Path) -> int:
    """How many configurations the checkpoint at ``path`` holds, its lines read as they
    are (0 when there is none)."""
    if not path.is_file():
        return 0
    return sum(1 for line in path.read_text().splitlines() if line.startswith('{"config"'))


OLDER_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {"device": "cpu", "dtype": "float32", "grid": MappingProxyType({"clock": "wall"})}
)
"""The settings a checkpoint written before ``--device``, ``--dtype`` and ``--clock``
existed leaves out, at the values those versions ran with. :func:`setup_of` leaves them
out at these values too (its header is then an older version's), and
:func:`load_checkpoint` fills them back into both setups before comparing them: a
setting left out is compared at its value, not as ``None``."""


def setup_of(
    target: str, spec: GridSpec, threads: int, device: str = "cpu", dtype: str = "float32"
) -> dict[str, Any]:
    """What must be equal for two runs' samples to belong to one profile (``device``,
    ``dtype`` and the grid's ``clock`` written only away from :data:`OLDER_DEFAULTS`)."""
    grid = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(spec).items()}
    if grid["clock"] == OLDER_DEFAULTS["grid"]["clock"]:
        del grid["clock"]
    setup: dict[str, Any] = {"target": target, "grid": grid, "threads": threads}
    if (device, dtype) != (OLDER_DEFAULTS["device"], OLDER_DEFAULTS["dtype"]):
        setup.update(device=device, dtype=dtype)
    return setup


def _with_defaults(setup: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``setup`` with each of ``defaults`` it leaves out filled in (a nested
    mapping's too)."""
    out = dict(setup)
    for key, value in defaults.items():
        if isinstance(value, Mapping) and isinstance(out.get(key, {}), dict):
            out[key] = _with_defaults(out.get(key, {}), value)
        elif key not in out:
            out[key] = value
    return out


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The configurations measured so far: samples by configuration index, and the number
    of unique prompts their runs used; the drafter's batch cells timed so far."""

    samples: dict[int, tuple[Sample, ...]]
    num_prompts: int
    draft_cells: dict[DraftKey, tuple[DraftSample, ...]] = field(default_factory=dict)


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed (other setup, malformed line)."""


def _same_model(recorded: Any, now: Any) -> bool:
    """Whether the ``target`` a checkpoint records and this run's name one model, however
    spelled (:func:`~edgespec.models.registry.same_model`; a name that is no model from
    here is compared as written)."""
    if not isinstance(recorded, str) or not isinstance(now, str):
        return bool(recorded == now)
    return same_model(recorded, now)


def _differences(found: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """Each setting that differs, ``dtype (checkpoint float32, now bfloat16)``, its
    values spelled as the flags take them (:func:`_spelled`)."""
    out = []
    for key in sorted(set(found) | set(wanted)):
        a, b = found.get(key), wanted.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{key}.{d}" for d in _differences(a, b)]
        elif a != b:
            out.append(f"{key} (checkpoint {_spelled(a)}, now {_spelled(b)})")
    return out


def _spelled(value: Any) -> str:
    """A setting's value as its flag takes it: a name bare (``cpu``, not ``'cpu'``), a
    number or list as written; one absent from the setup, ``not recorded``."""
    if value is None:
        return "not recorded"
    return value if isinstance(value, str) else repr(value)


def _count(value: Any, name: str, minimum: int = 0, limit: int | None = None) -> int:
    """``value`` if it is an integer (not a bool, a float or a string) in
    ``[minimum, limit)``; ``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {as_written(value)}")
    if value < minimum or (limit is not None and value >= limit):
        bounds = f"in [{minimum}, {limit})" if limit is not None else f">= {minimum}"
        raise ValueError(f"{name} must be {bounds}, got {value}")
    return value


def _sample(config: int, raw: Any, name: str) -> Sample:
    """One of a line's ``samples``, checked: a run number, ``[L_new >= 1, L_cached >= 0]``
    integer entries and a finite ``time_s`` >= 0 (a NaN would fit NaN coefficients)."""
    if not isinstance(raw, dict) or set(raw) != {"run", "entries", "time_s"}:
        raise ValueError(f"{name} must be an object with run, entries and time_s, got {raw!r:.80}")
    if not isinstance(raw["entries"], list) or not raw["entries"]:
        raise ValueError(f"{name}.entries must be a non-empty list, got {raw['entries']!r:.80}")
    entries = []
    for i, entry in enumerate(raw["entries"]):
        where = f"{name}.entries[{i}]"
        if not isinstance(entry, list) or len(entry) != 2:
            raise ValueError(f"{where} must be [L_new, L_cached], got {as_written(entry):.80}")
        entries.append(
            (_count(entry[0], f"{where} L_new", 1), _count(entry[1], f"{where} L_cached"))
        )
    time_s = raw["time_s"]
    if isinstance(time_s, bool) or not isinstance(time_s, int | float):
        raise ValueError(f"{name}.time_s must be a number, got {as_written(time_s)}")
    if not (math.isfinite(time_s) and time_s >= 0):
        raise ValueError(f"{name}.time_s must be a finite number >= 0, got {time_s}")
    return Sample(config, _count(raw["run"], f"{name}.run"), tuple(entries), float(time_s))


def _record(record: Any, num_configs: int) -> tuple[int, tuple[Sample, ...], int]:
    """A measured configuration's line, checked: (its index, its samples, its prompts)."""
    if not isinstance(record, dict) or set(record) != {"config", "num_prompts", "samples"}:
        raise ValueError(
            f"expected an object with config, num_prompts and samples, got {record!r:.80}"
        )
    config = _count(record["config"], "config", 0, num_configs)
    if not isinstance(record["samples"], list) or not record["samples"]:
        raise ValueError(f"samples must be a non-empty list, got {record['samples']!r:.80}")
    samples = tuple(_sample(config, s, f"samples[{i}]") for i, s in enumerate(record["samples"]))
    return config, samples, _count(record["num_prompts"], "num_prompts")


def _num_configs(setup: dict[str, Any]) -> int:
    """How many configurations the grid of ``setup`` (:func:`setup_of`'s) has."""
    grid: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in setup["grid"].items()
    }
    return len(design_grid(GridSpec(**grid)))


def load_checkpoint(
    path: Path, setup: dict[str, Any], start_over: str = "with --fresh"
) -> Checkpoint:
    """Read ``path``; raises :class:`CheckpointError` when it was written for another setup
    (the message says to run ``start_over`` to start over) or a line (other than a cut-off
    last one) is malformed: not JSON, a configuration index outside the grid or twice, an
    entry that is not two integers, a ``time_s`` that is not a finite number >= 0."""
    text = path.read_text()
    lines = text.splitlines()
    try:
        header = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CheckpointError(f"{path}:1: not an edgespec profile checkpoint")
    if header.get("version") != VERSION:
        raise CheckpointError(f"{path}:1: checkpoint version {header.get('version')!r}")
    if not isinstance(header.get("setup"), dict):
        raise CheckpointError(f"{path}:1: setup must be an object, got {header.get('setup')!r:.80}")
    recorded, now = (_with_defaults(one, OLDER_DEFAULTS) for one in (header["setup"], setup))
    if _same_model(recorded.get("target"), now.get("target")):
        recorded["target"] = now["target"]  # ``m/llama`` then, ``./m/llama`` now: one model
    diff = _differences(recorded, now)
    if diff:
        raise CheckpointError(
            f"{path} was written by a profile with other settings: {'; '.join(diff)}. "
            f"Run with the same settings, or {start_over} to start over"
        )
    num_configs = _num_configs(setup)
    samples: dict[int, tuple[Sample, ...]] = {}
    cells: dict[DraftKey, tuple[DraftSample, ...]] = {}
    num_prompts = 0
    for number, line in enumerate(lines[1:], start=2):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines) and not text.endswith("\n"):
                break  # cut off by a kill while being written: measure it again
            raise CheckpointError(f"{path}:{number}: malformed line ({exc})") from exc
        try:
            if is_draft_record(record):
                key, cell = read_draft_record(record)
                if key in cells:
                    raise ValueError(f"draft batch cell {key} was measured before")
                cells[key] = cell
                continue
            config, found, prompts = _record(record, num_configs)
        except ValueError as exc:
            raise CheckpointError(f"{path}:{number}: malformed line ({exc})") from exc
        if config in samples:
            raise CheckpointError(f"{path}:{number}: config {config} was measured before")
        samples[config] = found
        num_prompts += prompts
    return Checkpoint(samples, num_prompts, cells)


class CheckpointWriter:
    """Appends one line per measured configuration, flushed at once."""

    def __init__(self, path: Path, setup: dict[str, Any], append: bool) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text() if append and path.exists() else ""
        if text and not text.endswith("\n"):  # drop a cut-off last line, keeping the others
            write_text_atomically(path, text[: text.rfind("\n") + 1])
        self._file: TextIO = path.open("a" if text else "w")
        if not text:
            header = {"format": FORMAT, "version": VERSION, "setup": setup}
            self._file.write(json.dumps(header) + "\n")
            self._file.flush()

    def add(self, config: int, samples: Sequence[Sample], num_prompts: int) -> None:
        runs = [{"run": s.run, "entries": s.entries, "time_s": s.time_s} for s in samples]
        record = {"config": config, "num_prompts": num_prompts, "samples": runs}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def add_draft(self, key: DraftKey, samples: list[DraftSample]) -> None:
        self._file.write(json.dumps(draft_record(key, samples)) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> CheckpointWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
