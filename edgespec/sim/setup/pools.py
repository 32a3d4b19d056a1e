"""The pools a scenario's ``auto_topology`` lists and the entities they expand into.

Plain frozen dataclasses shared by :mod:`~edgespec.sim.setup.scenario` (which validates
them), :mod:`~edgespec.sim.setup.cells` (which groups pinned pools into cells) and
:mod:`~edgespec.sim.setup.topology` (which expands pools into devices and servers). This
module imports none of those three, so they import it without a circle; a function that
needs a scenario's topology takes anything with one (:class:`TopologySource`).
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from edgespec.config import ConfigError
from edgespec.hardware.batch_pricing import BatchPricing

MAX_DEVICES = 1_000_000
"""At most this many devices in a scenario's pools together (10× the largest measured
fleet, 100,000 devices in 482 MiB: docs/PERFORMANCE.md, "Fleet scale")."""
MAX_SERVERS = 100_000
"""At most this many servers in a scenario's pools together (50× that fleet's 2,000)."""

MAX_COUNTS_SHOWN = 8
"""How many pools' counts a fleet-size error lists (then "+ N more pools")."""


def check_fleet_size(kind: str, counts: Sequence[int], limit: int) -> None:
    """The pools' ``counts`` (each >= 1) sum to at most ``limit``: else a ``ConfigError``
    at the one pool's count, or, with more pools, at ``auto_topology.<kind>`` naming the
    total (no pool's count alone is to blame, nor has a bound of its own)."""
    total = sum(counts)
    if total <= limit:
        return
    if len(counts) == 1:
        raise ConfigError(
            f"auto_topology.{kind}[0].count",
            f"must be <= {limit} (a scenario has at most {limit:,} {kind} in all pools), "
            f"got {total}",
        )
    shown = " + ".join(f"{c:,}" for c in counts[:MAX_COUNTS_SHOWN])
    if len(counts) > MAX_COUNTS_SHOWN:
        shown += f" + {len(counts) - MAX_COUNTS_SHOWN} more pools"
    raise ConfigError(
        f"auto_topology.{kind}",
        f"{total:,} {kind} in all pools ({shown}), over the limit of {limit:,} {kind} in a "
        "scenario",
    )


def frozen_mapping(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy of ``mapping`` (a frozen config's default)."""
    return types.MappingProxyType(dict(mapping))


DEFAULT_SLO_MIX: Mapping[str, float] = frozen_mapping({"default": 1.0})
"""A device pool's ``slo_mix`` when none is given: every device of class ``default``. One
object, so that a check can tell it from a given mix (``is``)."""


@dataclass(frozen=True, slots=True)
class CostModelConfig:
    """``roofline`` (from model + hardware presets), or ``wisp``, ``zhu`` or ``lookup``
    (coefficients from a profile file)."""

    kind: Literal["roofline", "wisp", "zhu", "lookup"] = "roofline"
    profile: str | None = None


@dataclass(frozen=True, slots=True)
class DevicePool:
    """``count`` identical edge devices running ``draft_model`` on ``hardware``.
    ``server_pools``: the server pools (indices into ``auto_topology.servers``) its
    requests are routed among; empty: every server. Pinned pools form *cells*
    (:mod:`edgespec.sim.setup.cells`), which a run may split into shards."""

    name: str = "edge"
    count: int = 1
    draft_model: str = "qwen3-0.6b"
    hardware: str = "jetson-orin"
    link: str = "default"
    slo_mix: Mapping[str, float] = field(default_factory=lambda: DEFAULT_SLO_MIX)
    cost_model: CostModelConfig = field(default_factory=CostModelConfig)
    server_pools: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ServerPool:
    """``count`` identical target servers; ``kv_budget_tokens`` bounds resident KV.
    ``prefix_cache: false`` is SLED's server: no KV is kept between a session's
    verifications, so each one forwards the session's whole context again.
    ``batch_pricing``: how a verification batch is priced from its entries
    (:mod:`edgespec.hardware.batch_pricing`): ``summed`` (a ragged kernel: the cost model
    gets the batch's sums) or ``padded`` (a padded batched kernel: B rows, each of the
    batch's longest cached context and longest new block). ``prefill_part_tokens``:
    a longer uncached context is forwarded this many tokens a batch, its block queued
    again between parts (:func:`edgespec.core.prefill_parts.part_tokens`, the real
    server's rule; ``None``, the default here: one pass, however long)."""

    name: str = "server"
    count: int = 1
    target_model: str = "qwen3-32b"
    hardware: str = "a100"
    kv_budget_tokens: int = 48_000  # qwen3-32b on an a100: 12.6 GB of KV beside 65.5 GB
    max_batch_size: int = 32
    max_batch_tokens: int = 8192
    prefix_cache: bool = True
    cost_model: CostModelConfig = field(default_factory=CostModelConfig)
    batch_pricing: BatchPricing = "summed"
    prefill_part_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class TopologyConfig:
    devices: tuple[DevicePool, ...] = (DevicePool(),)
    servers: tuple[ServerPool, ...] = (ServerPool(),)


class TopologySource(Protocol):
    """What holds an ``auto_topology`` (a :class:`~edgespec.sim.setup.scenario.Scenario`)."""

    @property
    def auto_topology(self) -> TopologyConfig: ...


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
