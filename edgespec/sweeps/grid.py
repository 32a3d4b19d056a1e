"""Parameter sweeps: the cartesian product of ``key.path`` overrides over a scenario dict.

Generic over a runner ``run(scenario_dict) -> SystemMetrics`` so nothing here depends on
simulator internals. Overrides are applied with ``edgespec.config.apply_overrides``, so a
sweep key means exactly what ``key.path=value`` means on the command line.
"""

from __future__ import annotations

import csv
import io
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
    key_path,
    load_yaml,
    value_text,
)
from edgespec.config.errors import in_context
from edgespec.config.overrides import shown
from edgespec.errors import RunFailedError, UserInputError
from edgespec.metrics.types import SystemMetrics
from edgespec.output_paths import write_text_atomically
from edgespec.policies.contracts import PolicyContractError
from edgespec.sweeps.columns import Rank, cell, columns_record, ranked
from edgespec.sweeps.executor import SerialExecutor, SweepExecutor, results_of
from edgespec.sweeps.kept_points import KeptPoints
from edgespec.sweeps.progress import progress_bar
from edgespec.sweeps.stops import WorkerDied

Runner = Callable[[dict[str, Any]], SystemMetrics]
PointCheck = Callable[[Mapping[str, Any]], object]
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
    """``key=value`` text that ``edgespec.config.parse_override`` parses back to ``value``,
    the value as the user types it (:func:`edgespec.config.value_text`: ``x=false``,
    ``x=null``): a sweep point's label in its errors and progress."""
    dumped = value_text(value)
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
            raise ConfigError(
                key,
                "swept twice; give all its values in one key=v1,v2,... spec (--sweep takes "
                "every argument up to the next option: a plain override goes before --sweep)",
            )
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
            return shown(value_text(value))
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
    points: Sequence[Mapping[str, Any]], check: PointCheck, *, progress: bool = True
) -> None:
    """``check`` every point before any runs, under a progress bar when ``progress`` (a
    bad point's config error raised again naming it: ``at sweep point 3 of 3 (k=0): ...``)."""
    with progress_bar(progress) as bar:
        for n, point in enumerate(tracked(bar, f"checking {len(points):,} sweep points", points)):
            try:
                check(point)
            except ConfigError as exc:
                raise at_point(exc, n, len(points), point) from exc


def named_at(exc: Exception, where: str) -> Exception:
    """``exc`` naming which of a command's runs it came from (``where``: ``at sweep point 3
    of 3 (k=0)``, ``shard 2 of 3``), after a config error's field
    (:func:`~edgespec.config.errors.in_context`); of the same kind (a refusal, or a
    policy's broken contract; anything else a refusal), so the CLI prints one line with the
    same status."""
    if isinstance(exc, ConfigError):
        return in_context(exc, where)
    if isinstance(exc, PolicyContractError):
        return PolicyContractError(f"{where}: {exc}")
    return UserInputError(f"{where}: {exc}")


def at_point(exc: Exception, n: int, total: int, point: Mapping[str, Any]) -> Exception:
    """``exc`` naming sweep point ``n`` (from 0) of ``total`` (:func:`named_at`)."""
    return named_at(exc, f"at sweep point {n + 1} of {total} ({point_label(point)})")


def point_label(point: Mapping[str, Any]) -> str:
    """A point as its overrides type it: ``seed=1 duration_s=5``."""
    return " ".join(override_text(k, v) for k, v in point.items())


@dataclass(frozen=True, slots=True)
class _PointRun:
    """``run`` on one point's scenario (in a worker: it pickles), its refusal naming the
    point as a check's does: the scenario passed its checks, but a run can still refuse
    it (a file its policy reads, removed since)."""

    run: Runner
    total: int

    def __call__(self, item: tuple[int, Mapping[str, Any], dict[str, Any]]) -> SystemMetrics:
        n, point, scenario = item
        try:
            return self.run(scenario)
        except (UserInputError, PolicyContractError) as exc:
            raise at_point(exc, n, self.total, point) from exc


def _died(n: int, total: int, point: Mapping[str, Any]) -> str:
    """What a sweep whose point ``n`` (from 0) lost its worker process says."""
    return (f"sweep point {n + 1} of {total} ({point_label(point)}): its worker process died "
            "without an answer (killed: out of memory, or a signal); the points finished are "
            "kept: run the same command again, with fewer --workers if memory ran out")  # fmt: skip


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
    kept: KeptPoints | None = None,
) -> list[SweepPoint]:
    """Run ``run`` once per grid point on ``base`` with that point's overrides applied,
    on ``executor`` (default: serially in this process; ``run`` must pickle for a process
    pool). Points come back in grid order. ``base`` is not modified; each run gets a fresh
    deep copy. A run's refusal names its point (:func:`at_point`), and the pending runs are
    cancelled. A progress bar shows on stderr when ``progress`` is true (also while the
    runs' scenarios are made). ``kept``: each point is kept there as it finishes, and the
    points an earlier run of the same sweep kept are not run again
    (:mod:`edgespec.sweeps.kept_points`).
    """
    points = grid_points(grid)
    metrics: dict[int, SystemMetrics] = {} if kept is None else kept.kept(len(points))
    with progress_bar(progress) as bar:
        scenarios = [
            apply_overrides(base, [override_text(k, v) for k, v in p.items()])
            for p in tracked(bar, f"preparing {len(points):,} runs", points)
        ]
        task = bar.add_task(f"sweep of {len(points)} runs", total=len(points))
        if metrics:
            said = f"sweep: {len(metrics)} kept by an earlier run of this sweep"
            if progress:  # said once, whatever the bar's lines (a log: at its tenths)
                bar.print(said)
            bar.update(task, description=said, advance=len(metrics))
        items = [(n, p, scenarios[n]) for n, p in enumerate(points) if n not in metrics]
        with results_of(executor or SerialExecutor(), _PointRun(run, len(points)), items) as done:
            try:
                for position, result in done:  # the position in items
                    index = items[position][0]
                    metrics[index] = result
                    if kept is not None:
                        kept.keep(index, result)
                    label = point_label(points[index])
                    bar.update(task, description=f"sweep: done {label}", advance=1)
            except WorkerDied as died:  # its process killed: the machine's, not the input's
                n = items[died.index][0]
                raise RunFailedError(_died(n, len(points), points[n])) from None
    return [SweepPoint(i, MappingProxyType(dict(p)), metrics[i]) for i, p in enumerate(points)]


def _swept_cell(value: Any) -> Any:
    """A swept value in sweep.csv: ``null``, ``true`` and ``false`` as the user types them
    (not Python's ``None``, ``True``), anything else as :func:`~.columns.cell` writes it."""
    return value_text(value) if value is None or isinstance(value, bool) else cell(value)


def write_sweep(path_stem: Path, points: Sequence[SweepPoint]) -> tuple[Path, Path]:
    """Write ``<stem>.json`` (full records) and ``<stem>.csv`` (one flat row per point),
    each whole or not at all (:func:`~edgespec.output_paths.write_atomically`).

    CSV columns: ``index``, the swept keys (their values as typed: ``true``, ``null``),
    then every metric as a dotted path
    (:func:`~edgespec.sweeps.columns.flatten`: per-class SLO stats as
    ``slo_classes.<class>.…``, the batch-size histogram as ``batch_sizes.<size>.num_batches``;
    a null record, a run's latencies when it finished no request, as its fields, empty:
    :func:`~edgespec.sweeps.columns.columns_record`); a column missing from a point is left
    empty. A swept key that is a metric too (``duration_s``) is one column, as typed.
    """
    path_stem = Path(path_stem)
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    json_path = path_stem.with_suffix(".json")
    csv_path = path_stem.with_suffix(".csv")
    records = [p.to_dict() for p in points]
    write_text_atomically(json_path, json.dumps(records, indent=2, allow_nan=False) + "\n")
    rows: list[dict[str, Any]] = []
    swept: dict[str, None] = {}  # the swept keys, in order
    ranks: dict[str, Rank] = {}  # every metric column, and where it goes
    for p in points:
        metrics = ranked(columns_record(p.metrics), "", ())
        swept.update(dict.fromkeys(p.overrides))
        rows.append({"index": p.index, **{c: v for c, (v, _) in metrics.items()}})
        rows[-1].update({k: _swept_cell(v) for k, v in p.overrides.items()})  # as typed
        ranks.update({column: rank for column, (_, rank) in metrics.items() if column not in ranks})
    metric_columns = sorted((c for c in ranks if c not in swept), key=lambda c: ranks[c])
    columns = ["index", *swept, *metric_columns]
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=columns, restval="")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    write_text_atomically(csv_path, text.getvalue())
    return json_path, csv_path
