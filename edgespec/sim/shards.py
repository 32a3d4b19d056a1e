"""A pinned scenario run as shards: groups of its cells (:mod:`edgespec.sim.setup.cells`), each
simulated as an independent task on a sweep executor (local processes or Ray tasks,
:func:`~edgespec.sweeps.executor.make_executor`), their metrics merged into one
result identical to the single-process run with the same seed (tests/sim/test_shards.py).

A shard streams its records into a :class:`~edgespec.metrics.accumulator.MetricsAccumulator`
(with the whole scenario's server ids) and returns it; the driver merges the accumulators
and finishes them over the whole scenario's servers. With a record folder, each shard also
streams its records to files of its own (:class:`~edgespec.metrics.record_files.RecordFiles`
in ``shard-K/`` under the folder, which a worker must be able to write: on a Ray cluster a
shared filesystem), and the driver concatenates them into the folder's record files
(:func:`~edgespec.metrics.record_files.concatenate_records`): the single-process run's rows,
grouped by shard. A run that fails or is stopped (Ctrl-C, SIGTERM) removes the shards'
folders, once the executor's work has ended. A shard's run that refuses its input or whose
policy breaks its contract names the shard in its one line (``shard 2 of 3: ...``,
:func:`at_shard`), its exit status unchanged.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError
from edgespec.metrics.accumulator import SIM_BUSY_KEEP, MetricsAccumulator
from edgespec.metrics.types import SystemMetrics
from edgespec.policies.contracts import PolicyContractError
from edgespec.sweeps.grid import named_at


@dataclass(frozen=True, slots=True)
class ShardResult:
    """What one shard computed: its cells' metrics accumulator, rounds and wall time."""

    cells: tuple[int, ...]
    acc: MetricsAccumulator
    num_rounds: int
    num_events: int
    wall_s: float


@dataclass(frozen=True, slots=True)
class ShardedRun:
    """The merged metrics of a sharded run, and each shard's result."""

    metrics: SystemMetrics
    num_rounds: int
    shards: tuple[ShardResult, ...]


@dataclass(frozen=True, slots=True)
class ShardTask:
    """One shard's work: the scenario dict, its cells, the folder its record files go to
    (``None``: metrics only), and which shard it is (``shard`` from 0, of ``num_shards``)."""

    data: Mapping[str, Any]
    cells: tuple[int, ...]
    record_dir: Path | None = None
    shard: int = 0
    num_shards: int = 1


def at_shard(exc: Exception, shard: int, num_shards: int) -> Exception:
    """``exc`` naming shard ``shard`` (from 0) of ``num_shards``: ``shard 2 of 3: ...``
    (:func:`~edgespec.sweeps.grid.named_at`)."""
    return named_at(exc, f"shard {shard + 1} of {num_shards}")


def run_shard(task: ShardTask) -> ShardResult:
    """Simulate ``task``'s cells (module-level, so an executor can pickle it); a refusal
    or a policy's broken contract names the shard (:func:`at_shard`)."""
    try:
        return _simulate_shard(task)
    except (UserInputError, PolicyContractError) as exc:
        raise at_shard(exc, task.shard, task.num_shards) from exc


def _simulate_shard(task: ShardTask) -> ShardResult:
    """``task``'s cells simulated, their records streamed to its folder if it has one."""
    from edgespec.metrics.record_files import RecordFiles
    from edgespec.sim.setup.scenario import scenario_from_dict
    from edgespec.sim.simulator import StreamSink, paused_gc, simulate

    started = time.perf_counter()
    scenario = scenario_from_dict(task.data)
    files = None
    if task.record_dir is not None:
        files = RecordFiles(task.record_dir, rounds=scenario.record_rounds)
    sink = StreamSink() if files is None else files  # both keep their accumulator in .acc
    # a shard owns its worker process (or the CLI's): the collector paused
    with paused_gc(), files or contextlib.nullcontext():
        result = simulate(scenario, sink=sink, cells=task.cells)
    return ShardResult(
        task.cells, sink.acc, result.num_rounds, result.num_events, time.perf_counter() - started
    )


def simulate_sharded(
    data: Mapping[str, Any],
    num_shards: int,
    executor: Any,
    record_dir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ShardedRun:
    """Run the pinned scenario ``data`` as ``num_shards`` shards (at most one per cell) on
    ``executor`` (a :class:`~edgespec.sweeps.executor.SweepExecutor`) and merge them;
    with ``record_dir``, also its record files (the module docstring). ``progress(done,
    total)`` is called before the first shard runs and as each one finishes."""
    from edgespec.sim.setup.cells import plan_cells, split_cells
    from edgespec.sim.setup.scenario import scenario_from_dict

    scenario = scenario_from_dict(data)
    plans = plan_cells(scenario)
    if not plans:
        raise UserInputError(
            "--shards: only a scenario whose device pools are pinned to server pools "
            "(auto_topology.devices[*].server_pools) can be sharded"
        )
    groups = split_cells(plans, num_shards)
    parts = [None if record_dir is None else record_dir / f"shard-{k}" for k in range(len(groups))]
    tasks = [
        ShardTask(dict(data), g, part, k, len(groups))
        for k, (g, part) in enumerate(zip(groups, parts, strict=True))
    ]
    try:
        done = _run_shards(executor, tasks, progress)
        if record_dir is not None:
            from edgespec.metrics.record_files import concatenate_records

            concatenate_records(record_dir, [p for p in parts if p is not None])
    except BaseException:  # an error, Ctrl-C, SIGTERM: the shards' folders go too
        for part in parts:
            if part is not None:
                shutil.rmtree(part, ignore_errors=True)
        raise
    merged = MetricsAccumulator(SIM_BUSY_KEEP)
    for shard in done:
        merged.merge(shard.acc)
    num_servers = sum(p.num_servers for p in plans)
    return ShardedRun(
        merged.finish(scenario.duration_s, num_servers),
        sum(s.num_rounds for s in done),
        done,
    )


def _run_shards(
    executor: Any, tasks: list[ShardTask], progress: Callable[[int, int], None] | None
) -> tuple[ShardResult, ...]:
    """Every shard of ``tasks`` run on ``executor``, in order; the executor's work ended
    (its pending shards cancelled, a pool's processes reaped) when one fails."""
    from edgespec.sweeps.executor import results_of

    results: list[ShardResult | None] = [None] * len(tasks)
    if progress is not None:
        progress(0, len(tasks))
    with results_of(executor, run_shard, tasks) as finished:
        for count, (index, result) in enumerate(finished, 1):
            results[index] = result
            if progress is not None:
                progress(count, len(tasks))
    return tuple(r for r in results if r is not None)
