"""Topology expansion: a scenario's device and server pools written out as explicit
entities (:class:`~edgespec.sim.setup.pools.DeviceSpec`,
:class:`~edgespec.sim.setup.pools.ServerSpec`) with ids and SLO classes."""

from __future__ import annotations

from collections.abc import Mapping

from edgespec.sim.setup.pools import DeviceSpec as DeviceSpec
from edgespec.sim.setup.pools import ServerSpec as ServerSpec
from edgespec.sim.setup.pools import TopologySource


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


def expand_topology(
    scenario: TopologySource,
) -> tuple[tuple[DeviceSpec, ...], tuple[ServerSpec, ...]]:
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
