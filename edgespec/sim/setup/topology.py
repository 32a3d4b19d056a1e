"""Topology expansion: a scenario's device and server pools written out as explicit
entities (:class:`~edgespec.sim.setup.pools.DeviceSpec`,
:class:`~edgespec.sim.setup.pools.ServerSpec`) with ids and SLO classes."""

from __future__ import annotations

from collections.abc import Mapping

from edgespec.core.apportion import largest_remainder
from edgespec.sim.setup.pools import DeviceSpec as DeviceSpec
from edgespec.sim.setup.pools import ServerSpec as ServerSpec
from edgespec.sim.setup.pools import TopologySource


def _assign_classes(mix: Mapping[str, float], count: int) -> list[str]:
    """Deterministic class per device: largest-remainder apportionment, classes in order."""
    counts = largest_remainder(count, list(mix.values()))
    return [cls for cls, n in zip(mix, counts, strict=True) for _ in range(n)]


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
