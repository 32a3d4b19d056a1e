"""Parameter sweeps: the cartesian product of ``key.path`` overrides over a scenario dict.

Generic over a runner ``run(scenario_dict) -> SystemMetrics`` so nothing here depends on
simulator internals. Overrides are applied with ``edgespec.config.apply_overrides``, so a
sweep key means exactly what ``key.path=value`` means on the command line.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import yaml

from edgespec.config import (
    ConfigError,
    OverrideError,
    apply_overrides,
    dump_yaml,
    key_path,
    load_yaml,
)
from edgespec.config.overrides import shown
from edgespec.errors import UserInputError
from edgespec.metrics.types import SystemMetrics
from edgespec.sweeps.executor import SerialExecutor, SweepExecutor

Runner = Callable[[dict[str, Any]], SystemMetrics]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One run of a sweep: the overrides applied (in grid key order) and its metrics."""

    index: int
    overrides: Mapping[str, Any]
    metrics: SystemMetrics

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "overrides": dict(self.overrides), **self.metrics.to_dict()}


def override_text(key: str, value: Any) -> str:
    """``key=value`` text that ``edgespec.config.parse_override`` parses back to ``value``."""
    dumped = dump_yaml(value, default_flow_style=True, width=math.inf, allow_unicode=True)
    dumped = dumped.removesuffix("\n...\n").strip()
    text = f"{key}={dumped}"
    if load_yaml(dumped) != value:
        raise ConfigError(key, f"value {value!r} does not survive a YAML round trip")
    return text


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """Parse CLI sweep specs ``key.path=v1,v2,...`` into an ordered grid.

    Values are YAML scalars or flow collections (``servers.count=1,2,4``,
    ``policy.name=fcfs,lab``, ``gamma=[1,2],[3,4]``). Errors name the offending spec.
    """
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise OverrideError(item, "must look like key.path=v1,v2,...", "--sweep")
        key = ".".join(key_path(item, key, "--sweep"))
        if key in grid:
            raise ConfigError(key, "swept twice; give all its values in one key=v1,v2,... spec")
        if not raw.strip():
            raise ConfigError(key, "sweep needs at least one value after '='")
        if raw.strip().endswith(","):
            raise ConfigError(key, f"empty value at the end of sweep values {raw!r}")
        try:
            values = load_yaml(f"[{raw}]")
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ConfigError(key, f"cannot parse sweep values {raw!r}: {problem}") from exc
        twice = _repeated(values)
        if twice is not None:
            raise ConfigError(
                key, f"sweep value {twice} repeats an earlier value (the same runs); give each once"
            )
        grid[key] = values
    return grid


def _repeated(values: Sequence[Any]) -> str | None:
    """The first value of ``values`` given again, as YAML writes it (``1`` and ``1.0`` are
    one value, ``true`` and ``1`` two); ``None`` when each is given once."""
    seen: set[Any] = set()
    for value in values:
        mark: Any = (value, type(value) is bool)
        if isinstance(value, list | dict):
            try:
                mark = json.dumps(value, sort_keys=True, default=repr)
            except TypeError:  # keys of more than one type do not sort
                mark = repr(value)
        if mark in seen:
            text = dump_yaml(value, default_flow_style=True, width=math.inf, allow_unicode=True)
            return shown(text.removesuffix("\n...\n").strip())
        seen.add(mark)
    return None


MAX_POINTS = 100_000
"""The most points one sweep may have (each is validated, then run)."""


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """The cartesian product of ``grid`` in key order, last key varying fastest; more than
    :data:`MAX_POINTS` points are refused before any is made."""
    for key, values in grid.items():
        if isinstance(values, str) or len(values) == 0:
            raise ConfigError(key, "sweep needs a non-empty list of values")
    size = math.prod(len(values) for values in grid.values())
    if size > MAX_POINTS:
        sizes = " x ".join(f"{len(values):,} {key}" for key, values in grid.items())
        raise UserInputError(
            f"--sweep: {size:,} points ({sizes}); at most {MAX_POINTS:,} in one sweep"
        )
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]


def check_points(
    points: Sequence[Mapping[str, Any]],
    check: Callable[[Mapping[str, Any]], object],
    *,
    progress: bool = True,
) -> None:
    """``check`` every point (it raises on a bad one) before any runs, with a progress bar
    on the terminal when ``progress`` is true (a large grid takes a while)."""
    with progress_bar(progress) as bar:
        for point in tracked(bar, f"checking {len(points):,} sweep points", points):
            check(point)


def tracked(bar: Any, description: str, items: Sequence[T]) -> Iterator[T]:
    """``items``, one by one, a task of ``bar`` advanced as each is done with."""
    task = bar.add_task(description, total=len(items))
    for item in items:
        yield item
        bar.advance(task)


def run_sweep(
    base: Mapping[str, Any],
    grid: Mapping[str, Sequence[Any]],
    run: Runner,
    *,
    progress: bool = True,
    executor: SweepExecutor | None = None,
) -> list[SweepPoint]:
    """Run ``run`` once per grid point on ``base`` with that point's overrides applied,
    on ``executor`` (default: serially in this process; ``run`` must pickle for a process
    pool). Points come back in grid order.

    ``base`` is not modified; each run gets a fresh deep copy. A progress bar shows on the
    terminal when ``progress`` is true (also while the runs' scenarios are made).
    """
    points = grid_points(grid)
    metrics: dict[int, SystemMetrics] = {}
    with progress_bar(progress) as bar:
        scenarios = [
            apply_overrides(base, [override_text(k, v) for k, v in p.items()])
            for p in tracked(bar, f"preparing {len(points):,} runs", points)
        ]
        task = bar.add_task(f"sweep of {len(points)} runs", total=len(points))
        for index, result in (executor or SerialExecutor()).map_unordered(run, scenarios):
            metrics[index] = result
            label = " ".join(f"{k}={v}" for k, v in points[index].items())
            bar.update(task, description=f"sweep: done {label}", advance=1)
    return [SweepPoint(i, MappingProxyType(dict(p)), metrics[i]) for i, p in enumerate(points)]


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts/lists → ``a.b`` / ``a.0.b`` keys with scalar values."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, list):
            flat.update(flatten({str(i): v for i, v in enumerate(value)}, f"{name}."))
        else:
            flat[name] = value
    return flat


def write_sweep(path_stem: Path, points: Sequence[SweepPoint]) -> tuple[Path, Path]:
    """Write ``<stem>.json`` (full records) and ``<stem>.csv`` (one flat row per point).

    CSV columns: ``index``, the swept keys, then every metric as a dotted path (per-class
    SLO stats as ``slo_classes.<i>.…``); a column missing from a point is left empty.
    """
    path_stem = Path(path_stem)
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    json_path = path_stem.with_suffix(".json")
    csv_path = path_stem.with_suffix(".csv")
    records = [p.to_dict() for p in points]
    json_path.write_text(json.dumps(records, indent=2, allow_nan=False) + "\n")
    rows = []
    for p in points:
        row: dict[str, Any] = {"index": p.index}
        row.update({k: _cell(v) for k, v in p.overrides.items()})
        row.update(flatten(p.metrics.to_dict()))
        rows.append(row)
    columns: list[str] = []
    for row in rows:
        columns.extend(c for c in row if c not in columns)
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, restval="")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return json_path, csv_path


def _cell(value: Any) -> Any:
    if isinstance(value, list | dict):
        return json.dumps(value)
    return value


def progress_bar(enabled: bool) -> Any:
    """A rich Progress (disabled when not ``enabled``) used as a context manager."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not enabled,
        transient=False,
    )
