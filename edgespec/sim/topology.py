"""Topology expansion: a scenario's device and server pools written out as explicit
entities (:class:`DeviceSpec`, :class:`ServerSpec`) with ids and SLO classes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from edgespec.sim.scenario import DevicePool, Scenario, ServerPool


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    """One expanded edge device."""

    device_id: int
    pool: DevicePool
    slo_class: str
    pool_index: int = 0


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One expanded target server."""

    server_id: int
    pool: ServerPool
    pool_index: int = 0


def _assign_classes(mix: Mapping[str, float], count: int) -> list[str]:
    """Deterministic class per device: largest-remainder apportionment, classes in order."""
    total = sum(mix.values())
    quotas = [(cls, count * share / total) for cls, share in mix.items()]
    counts = {cls: int(q) for cls, q in quotas}
    left = count - sum(counts.values())
    by_remainder = sorted(quotas, key=lambda cq: -(cq[1] - int(cq[1])))
    for cls, _ in by_remainder[:left]:
        counts[cls] += 1
    return [cls for cls, _ in quotas for _ in range(counts[cls])]


def expand_topology(scenario: Scenario) -> tuple[tuple[DeviceSpec, ...], tuple[ServerSpec, ...]]:
    """Pools → explicit devices (ids 0..) and servers (ids 0..), in pool order."""
    devices: list[DeviceSpec] = []
    for i, pool in enumerate(scenario.auto_topology.devices):
        for cls in _assign_classes(pool.slo_mix, pool.count):
            devices.append(DeviceSpec(len(devices), pool, cls, i))
    servers: list[ServerSpec] = []
    for i, spool in enumerate(scenario.auto_topology.servers):
        for _ in range(spool.count):
            servers.append(ServerSpec(len(servers), spool, i))
    return tuple(devices), tuple(servers)
