"""Cells: a scenario whose device pools are pinned to disjoint sets of server pools, and
the shards such a scenario splits into.

A device pool with ``server_pools`` routes its requests among those pools' servers only.
When every device pool is pinned and any two pools name either the same server pools or
disjoint ones, the fleet falls apart into *cells* (one per distinct set of server pools,
numbered by their first server pool) that never interact: no request, block or server is
shared. Each cell then has its own random streams, derived from the scenario seed and the
cell's number only (routing tie-breaks, the workload's ramp/length/think-time draws), its
own routing policy instance (a round-robin cursor) and its own session count (which
trace-acceptance sequence a session replays); every device keeps its stream by its global
index (:func:`~edgespec.sim.model.rng.spawn_streams`). A run of any subset of the cells — a
*shard*, :func:`select_cells` — therefore computes exactly the records of those cells in
the run of the whole scenario, and the shards' metrics merge into the whole run's
(:mod:`edgespec.sim.shards`).

``auto_topology.cells: N`` writes such a scenario in one line (:func:`replicate_cells`):
every device pool and every server pool is cut into N equal pools, and the k-th cut of
each device pool is pinned to the k-th cuts of the server pools (names ``<pool>-<k>``,
cell-major order), exactly as if the N cells had been written out by hand.

The rule for when a scenario may be sharded: every device pool pinned, pins equal or
disjoint, and a ``closed_loop`` workload (Poisson and trace arrivals are one stream for
the whole fleet, which cells cannot split). A scenario without pins runs as today: one
cell holding every server, with the scenario-wide streams.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from edgespec.config import ConfigError, as_written
from edgespec.sim.model.layout import Layout
from edgespec.sim.setup.pools import (
    MAX_DEVICES,
    MAX_SERVERS,
    DevicePool,
    DeviceSpec,
    ServerPool,
    ServerSpec,
    TopologySource,
    check_fleet_size,
)


class _Workload(Protocol):
    @property
    def kind(self) -> str: ...


class CellSource(TopologySource, Protocol):
    """What the cell rules read of a :class:`~edgespec.sim.setup.scenario.Scenario`: its
    pools and its workload's kind (this module cannot import the scenario, which imports
    it to validate the pins)."""

    @property
    def workload(self) -> _Workload: ...


@dataclass(frozen=True, slots=True)
class CellPlan:
    """One cell of a pinned scenario: its device pools and server pools (indices)."""

    index: int
    device_pools: tuple[int, ...]
    server_pools: tuple[int, ...]
    num_devices: int
    num_servers: int


def plan_cells(scenario: CellSource) -> tuple[CellPlan, ...]:
    """The scenario's cells, numbered by their first server pool; ``()`` when no device
    pool is pinned. Raises :class:`ConfigError` when the pins break the cell rules."""
    topo = scenario.auto_topology
    pins = [pool.server_pools for pool in topo.devices]
    if not any(pins):
        return ()
    sets: dict[frozenset[int], list[int]] = {}
    for i, pinned in enumerate(pins):
        where = f"auto_topology.devices[{i}].server_pools"
        if not pinned:
            raise ConfigError(where, "pin every device pool to server pools, or none")
        for k in pinned:
            if not 0 <= k < len(topo.servers):
                raise ConfigError(where, f"no server pool {k} (there are {len(topo.servers)})")
        key = frozenset(pinned)
        for other in sets:
            if other != key and other & key:
                raise ConfigError(
                    where,
                    f"shares server pools {sorted(other & key)} with another pool's pins "
                    f"{sorted(other)}: pins must be equal or disjoint",
                )
        sets.setdefault(key, []).append(i)
    covered = {k for pinned in pins for k in pinned}
    for k in range(len(topo.servers)):
        if k not in covered:
            raise ConfigError(
                f"auto_topology.servers[{k}]", "no device pool is pinned to this server pool"
            )
    if scenario.workload.kind != "closed_loop":
        raise ConfigError(
            "workload.kind",
            "pinned device pools need a closed_loop workload (Poisson and trace arrivals "
            "are one stream for the whole fleet)",
        )
    ordered = sorted(sets.items(), key=lambda item: min(item[0]))
    return tuple(
        CellPlan(
            index,
            tuple(device_pools),
            tuple(sorted(server_pools)),
            sum(topo.devices[i].count for i in device_pools),
            sum(topo.servers[k].count for k in server_pools),
        )
        for index, (server_pools, device_pools) in enumerate(ordered)
    )


def select_cells(
    scenario: CellSource,
    devices: Sequence[DeviceSpec],
    servers: Sequence[ServerSpec],
    cells: Sequence[int] | None,
) -> tuple[list[DeviceSpec], list[ServerSpec], Layout]:
    """The devices and servers of ``cells`` (all when ``None``), in scenario order, and
    their :class:`Layout`. Asking an unpinned scenario for cells, or for a cell it does not
    have, is a caller's mistake (the CLI checks ``--shards`` first): a ValueError."""
    plans = plan_cells(scenario)
    if not plans:
        if cells is not None:
            raise ValueError(f"cells {list(cells)} asked of a scenario without pinned pools")
        return list(devices), list(servers), Layout.whole(len(devices), len(servers))
    chosen = sorted(set(range(len(plans)) if cells is None else cells))
    for c in chosen:
        if not 0 <= c < len(plans):
            raise ValueError(f"no cell {c}: the scenario has {len(plans)} (0 to {len(plans) - 1})")
    slot_of_device_pool = {p: s for s, c in enumerate(chosen) for p in plans[c].device_pools}
    slot_of_server_pool = {p: s for s, c in enumerate(chosen) for p in plans[c].server_pools}
    kept_devices = [d for d in devices if d.pool_index in slot_of_device_pool]
    kept_servers = [s for s in servers if s.pool_index in slot_of_server_pool]
    layout = Layout(
        tuple(chosen),
        tuple(slot_of_device_pool[d.pool_index] for d in kept_devices),
        tuple(slot_of_server_pool[s.pool_index] for s in kept_servers),
        tuple(d.device_id for d in kept_devices),
        tuple(s.server_id for s in kept_servers),
    )
    return kept_devices, kept_servers, layout


def split_cells(plans: Sequence[CellPlan], num_shards: int) -> list[tuple[int, ...]]:
    """``plans`` in at most ``num_shards`` groups of about equal devices (largest cell to
    the lightest group); each group sorted. Raises ValueError when ``num_shards < 1``."""
    if num_shards < 1:
        raise ValueError(f"shards must be >= 1, got {num_shards}")
    groups: list[list[int]] = [[] for _ in range(min(num_shards, len(plans)))]
    load = [0] * len(groups)
    for plan in sorted(plans, key=lambda p: (-p.num_devices, p.index)):
        lightest = load.index(min(load))
        groups[lightest].append(plan.index)
        load[lightest] += plan.num_devices
    return [tuple(sorted(g)) for g in groups if g]


def count_step(data: Mapping[str, Any], key: str) -> int:
    """The step between the values of ``key`` (an override key) that the scenario mapping
    ``data`` takes: its ``auto_topology.cells`` N (> 1) for a pool's count, which
    :func:`replicate_cells` splits into N equal pools, else 1."""
    topo = data.get("auto_topology")
    num = topo.get("cells") if isinstance(topo, Mapping) else None
    parts = key.strip().split(".")
    pool_count = len(parts) == 4 and parts[1] in ("devices", "servers") and parts[2].isdigit()
    pool_count = pool_count and parts[3] == "count"
    if type(num) is int and num > 1 and parts[0] == "auto_topology" and pool_count:
        return num
    return 1


def replicate_cells(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """A scenario mapping with ``auto_topology.cells: N`` written out as N pinned cells
    (module docstring); N = 1 or no ``cells`` key: the pools as written. Raises
    :class:`ConfigError` naming the field when a pool does not split evenly or is pinned
    already."""
    topo = data.get("auto_topology")
    if not isinstance(topo, Mapping) or "cells" not in topo:
        return data
    num = topo["cells"]
    if type(num) is not int or num < 1:
        raise ConfigError("auto_topology.cells", f"must be an integer >= 1, got {as_written(num)}")
    if num == 1:  # the pools as written
        return {**data, "auto_topology": {k: v for k, v in topo.items() if k != "cells"}}
    devices = list(topo.get("devices", ({},)))
    servers = list(topo.get("servers", ({},)))
    defaults: dict[str, DevicePool | ServerPool] = {
        "devices": DevicePool(),
        "servers": ServerPool(),
    }
    for kind, pools in (("devices", devices), ("servers", servers)):
        for i, pool in enumerate(pools):
            where = f"auto_topology.{kind}[{i}]"
            if not isinstance(pool, Mapping):
                raise ConfigError(where, f"expected a mapping, got {as_written(pool)}")
            count = pool.get("count", defaults[kind].count)
            if type(count) is not int or count < num or count % num:
                raise ConfigError(
                    f"{where}.count",
                    f"must be a multiple of auto_topology.cells ({num}), got {as_written(count)}",
                )
            if pool.get("server_pools"):
                raise ConfigError(
                    f"{where}.server_pools", "auto_topology.cells pins the pools; leave it out"
                )
        limit = MAX_DEVICES if kind == "devices" else MAX_SERVERS
        check_fleet_size(kind, [p.get("count", defaults[kind].count) for p in pools], limit)

    def cut(pool: Mapping[str, Any], k: int, kind: str) -> dict[str, Any]:
        name = pool.get("name", defaults[kind].name)
        return {
            **pool,
            "name": f"{name}-{k}",
            "count": pool.get("count", defaults[kind].count) // num,
        }

    width = len(servers)
    rest = {key: value for key, value in topo.items() if key != "cells"}
    rest["devices"] = [
        {**cut(pool, k, "devices"), "server_pools": list(range(k * width, (k + 1) * width))}
        for k in range(num)
        for pool in devices
    ]
    rest["servers"] = [cut(pool, k, "servers") for k in range(num) for pool in servers]
    return {**data, "auto_topology": rest}
