"""A pinned scenario run as shards: groups of its cells (:mod:`edgespec.sim.cells`), each
simulated as an independent task on a sweep executor (local processes or Ray tasks,
:func:`~edgespec.experiments.executor.make_executor`), their metrics merged into one
result identical to the single-process run with the same seed (tests/sim/test_shards.py).

A shard streams its records into a :class:`~edgespec.metrics.accumulator.MetricsAccumulator`
(with the whole scenario's server ids) and returns it; the driver merges the accumulators
and finishes them over the whole scenario's servers.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgespec.metrics.accumulator import SIM_BUSY_KEEP, MetricsAccumulator
from edgespec.metrics.types import SystemMetrics


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


def run_shard(item: tuple[Mapping[str, Any], tuple[int, ...]]) -> ShardResult:
    """Simulate the cells ``item[1]`` of the scenario dict ``item[0]`` (module-level, so
    an executor can pickle it)."""
    from edgespec.sim.scenario import scenario_from_dict
    from edgespec.sim.simulator import StreamSink, paused_gc, simulate

    data, cells = item
    started = time.perf_counter()
    sink = StreamSink()
    with paused_gc():  # a shard owns its worker process (or the CLI's)
        result = simulate(scenario_from_dict(data), sink=sink, cells=cells)
    return ShardResult(
        cells, sink.acc, result.num_rounds, result.num_events, time.perf_counter() - started
    )


def simulate_sharded(data: Mapping[str, Any], num_shards: int, executor: Any) -> ShardedRun:
    """Run the pinned scenario ``data`` as ``num_shards`` shards (at most one per cell) on
    ``executor`` (a :class:`~edgespec.experiments.executor.SweepExecutor`) and merge them."""
    from edgespec.config import ConfigError
    from edgespec.sim.cells import plan_cells, split_cells
    from edgespec.sim.scenario import scenario_from_dict

    scenario = scenario_from_dict(data)
    plans = plan_cells(scenario)
    if not plans:
        raise ConfigError(
            "--shards",
            "only a scenario whose device pools are pinned to server pools "
            "(auto_topology.devices[*].server_pools) can be sharded",
        )
    groups = split_cells(plans, num_shards)
    results: list[ShardResult | None] = [None] * len(groups)
    for index, result in executor.map_unordered(run_shard, [(dict(data), g) for g in groups]):
        results[index] = result
    done = tuple(r for r in results if r is not None)
    merged = MetricsAccumulator(SIM_BUSY_KEEP)
    for shard in done:
        merged.merge(shard.acc)
    num_servers = sum(p.num_servers for p in plans)
    return ShardedRun(
        merged.finish(scenario.duration_s, num_servers),
        sum(s.num_rounds for s in done),
        done,
    )
