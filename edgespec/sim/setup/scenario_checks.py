"""The checks of a scenario's ``auto_topology`` pools, for
:meth:`edgespec.sim.setup.scenario.Scenario.validate`: each range, the fleet's size
(:data:`MAX_DEVICES`, :data:`MAX_SERVERS`), and no cost-model profile where its kind takes
none (``config field 'auto_topology.servers[0].cost_model.profile': applies only to kind:
wisp, zhu or lookup (kind is roofline)``)."""

from __future__ import annotations

import math
from collections.abc import Collection

from edgespec.config import ConfigError, applies_only
from edgespec.errors import did_you_mean
from edgespec.sim.setup.pools import (
    DEFAULT_SLO_MIX,
    MAX_DEVICES,
    MAX_SERVERS,
    CostModelConfig,
    DevicePool,
    TopologyConfig,
    check_fleet_size,
)
from edgespec.sim.setup.workload_config import non_negative


def validate_topology(
    topo: TopologyConfig, links: Collection[str], slo_classes: Collection[str]
) -> None:
    """Every pool in range (its link among ``links``, its classes among ``slo_classes``),
    and at most :data:`MAX_DEVICES` devices and :data:`MAX_SERVERS` servers in all (a bound
    checked before any is built)."""
    if not topo.devices:
        raise ConfigError("auto_topology.devices", "needs at least one device pool")
    if not topo.servers:
        raise ConfigError("auto_topology.servers", "needs at least one server pool")
    for i, pool in enumerate(topo.devices):
        _validate_devices(f"auto_topology.devices[{i}]", pool, links, slo_classes)
    for i, spool in enumerate(topo.servers):
        where = f"auto_topology.servers[{i}]"
        for name in ("count", "kv_budget_tokens", "max_batch_size", "max_batch_tokens"):
            if getattr(spool, name) < 1:
                raise ConfigError(f"{where}.{name}", f"must be >= 1, got {getattr(spool, name)}")
        if spool.prefill_part_tokens is not None and spool.prefill_part_tokens < 1:
            got = spool.prefill_part_tokens
            raise ConfigError(f"{where}.prefill_part_tokens", f"must be >= 1 or null, got {got}")
        validate_cost(f"{where}.cost_model", spool.cost_model)
    check_fleet_size("devices", [p.count for p in topo.devices], MAX_DEVICES)
    check_fleet_size("servers", [p.count for p in topo.servers], MAX_SERVERS)


def _validate_devices(
    where: str, pool: DevicePool, links: Collection[str], slo_classes: Collection[str]
) -> None:
    if pool.count < 1:
        raise ConfigError(f"{where}.count", f"must be >= 1, got {pool.count}")
    if pool.link not in links:
        raise ConfigError(
            f"{where}.link",
            f"unknown link {pool.link!r}; known: {sorted(links)}" + did_you_mean(pool.link, links),
        )
    if pool.slo_mix is DEFAULT_SLO_MIX and not DEFAULT_SLO_MIX.keys() <= set(slo_classes):
        raise ConfigError(f"{where}.slo_mix", _default_mix_problem(slo_classes))
    for cls, share in pool.slo_mix.items():
        if cls not in slo_classes:
            raise ConfigError(f"{where}.slo_mix.{cls}", _unknown_mix_class(cls, slo_classes))
        non_negative(f"{where}.slo_mix.{cls}", share)
    total = sum(pool.slo_mix.values())
    if not pool.slo_mix or total <= 0:
        raise ConfigError(f"{where}.slo_mix", "needs at least one class with a positive share")
    if not math.isfinite(pool.count * total):  # the apportionment's quotas would overflow
        raise ConfigError(
            f"{where}.slo_mix",
            f"shares too large: {pool.count} devices x their sum ({total}) is not a finite "
            "number; the shares are relative weights, e.g. fractions of 1",
        )
    validate_cost(f"{where}.cost_model", pool.cost_model)


def _default_mix_problem(slo_classes: Collection[str]) -> str:
    """What is wrong with a pool's default slo_mix when slo_classes leaves out its class:
    the user wrote neither the mix nor (given ``slo_classes``) the class it names."""
    (name,) = DEFAULT_SLO_MIX
    said = f"not given, so its devices are all of SLO class {name!r}, which slo_classes"
    if not slo_classes:
        return f"{said}, empty, does not have; add a {name!r} class to slo_classes"
    return (
        f"{said} does not have (its classes: {sorted(slo_classes)}); give the pool an "
        f"slo_mix over those classes (e.g. {{{next(iter(slo_classes))}: 1}}) or add a "
        f"{name!r} class to slo_classes"
    )


def _unknown_mix_class(name: str, slo_classes: Collection[str]) -> str:
    """What is wrong with a pool's ``slo_mix`` class that slo_classes lacks, and (unless a
    known one is close, a typo) the ways out: the mix over the known classes, or the class
    added to them, which an override ``slo_classes={...}`` (the classes replaced, not
    added to) may have left out."""
    said = f"unknown SLO class; known: {sorted(slo_classes)}"
    close = did_you_mean(name, slo_classes)
    if close:
        return said + close
    mix = ""
    if slo_classes:
        mix = f"give the pool an slo_mix over those (e.g. {{{next(iter(slo_classes))}: 1}}) or "
    return (
        f"{said}; {mix}add a {name!r} class to slo_classes (slo_classes.{name}=TOK_S adds "
        "one to the others; slo_classes={...} replaces them all)"
    )


def validate_cost(where: str, cost: CostModelConfig) -> None:
    """A profile for each kind but ``roofline``, which takes none (its presets decide)."""
    if cost.kind == "roofline":
        to = "kind: wisp, zhu or lookup"
        applies_only(f"{where}.profile", cost.profile, None, to, "kind is roofline")
    elif cost.profile is None:
        raise ConfigError(f"{where}.profile", f"cost model {cost.kind!r} needs a profile")
