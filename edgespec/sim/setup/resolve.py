"""Resolution: everything a validated :class:`~edgespec.sim.setup.scenario.Scenario` names,
loaded once, before anything is built.

A scenario names presets and files: model and hardware presets and profiles (cost
models), a workload trace, acceptance traces, a length table, a WISP profile. Resolving
loads each of them once, and reports every failure as a :class:`ConfigError` at the
scenario field that named it (a file's own error keeps its file and line,
:func:`edgespec.config.at_field`). Building (:mod:`edgespec.sim.setup.build`) is then one
pass over the :class:`ResolvedScenario`, with no file loading.
"""

from __future__ import annotations

import types
from dataclasses import dataclass

from edgespec.config import ConfigError, PolicySpec, at_field
from edgespec.hardware.cost_models import CostModel, build_cost_model, load_architecture
from edgespec.hardware.profile_info import check_role, profile_info
from edgespec.hardware.wisp import wisp_batching_params
from edgespec.policies.fusing import spec_fusing
from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.network import Link
from edgespec.sim.model.semantic import RejectShareTable, load_reject_table
from edgespec.sim.model.stop_model import ReplayFeatures
from edgespec.sim.setup.lengths import LengthTable
from edgespec.sim.setup.pools import CostModelConfig
from edgespec.sim.setup.scenario import Scenario
from edgespec.sim.setup.sources import (
    load_acceptance,
    load_lengths,
    load_workload_trace,
    stop_features,
)
from edgespec.sim.setup.workload import TraceEntry

WISP_NEEDS = (
    "give a profile (or a_s, b_compute_s, b_read_s, c_s), or a server pool with a wisp cost model"
)
"""What a ``wisp`` batching policy without coefficients is told to give, in a scenario."""


@dataclass(frozen=True, slots=True)
class ResolvedPolicies:
    """The scenario's policies by registry name, ``wisp`` batching with its Eq. 19
    coefficients filled in (:func:`edgespec.hardware.wisp.wisp_batching_params`);
    ``stop``: the stop predictor's policy, if it has one."""

    routing: PolicySpec
    batching: PolicySpec
    window: PolicySpec
    stop: PolicySpec | None = None


@dataclass(frozen=True, slots=True)
class ResolvedDevicePool:
    """A device pool's draft cost model, its draft model's vocabulary size and its link;
    ``hidden_size``: its draft model's (d_h, what semantic verification's hidden states
    carry)."""

    draft_cost: CostModel
    vocab_size: int
    link: Link
    hidden_size: int = 0


@dataclass(frozen=True, slots=True)
class ResolvedServerPool:
    """A server pool's target cost model and, where fused rounds are possible, its
    co-located draft: the first device pool's draft model on this pool's hardware
    (roofline), run on the engine that verifies (:mod:`edgespec.sim.loop.fused`)."""

    target_cost: CostModel
    colocated_draft: CostModel | None


@dataclass(frozen=True, slots=True)
class ResolvedScenario:
    """A validated scenario and every named thing it needs, loaded.

    ``colocated``: whether each server pool has its co-located draft.
    ``device_pools``/``server_pools``: by pool index (``auto_topology``). ``trace``: the
    workload trace's entries (``()`` without one). ``lengths``: the length table (``None``
    for a trace workload). ``stop_features``: what the stop predictor replays (``None``
    without a stop predictor). ``reject_table``: semantic verification's reject-share
    table (``None`` without one, :mod:`edgespec.sim.model.semantic`).
    """

    scenario: Scenario
    colocated: bool
    policies: ResolvedPolicies
    device_pools: tuple[ResolvedDevicePool, ...]
    server_pools: tuple[ResolvedServerPool, ...]
    trace: tuple[TraceEntry, ...]
    acceptance: AcceptanceModel
    lengths: LengthTable | None
    stop_features: tuple[ReplayFeatures, ...] | None
    reject_table: RejectShareTable | None = None


def resolve(scenario: Scenario, *, colocated: bool | None = None) -> ResolvedScenario:
    """Load everything ``scenario`` names, once, before any policy object exists: the
    policy specs, the fleet's cost models, the trace, the acceptance model, the length
    table, the stop predictor's features and the reject-share table, in that order.

    ``colocated``: give each server pool its co-located draft; default: when fused rounds
    are possible (:func:`edgespec.policies.fusing.spec_fusing` of the mode and the window
    policy's spec; a caller that brings its own window policy says). Raises
    :class:`ConfigError` naming the scenario field at fault."""
    policies = resolve_policies(scenario)
    if colocated is None:
        colocated = spec_fusing(policies.window, scenario.mode) is not False
    devices = resolve_device_pools(scenario)
    servers = resolve_server_pools(scenario, colocated)
    trace = load_workload_trace(scenario)
    acceptance = load_acceptance(scenario, trace)
    lengths = load_lengths(scenario)
    features = stop_features(scenario, trace, acceptance)
    table = resolve_reject_table(scenario, trace)
    return ResolvedScenario(
        scenario,
        colocated,
        policies,
        devices,
        servers,
        trace,
        acceptance,
        lengths,
        features,
        table,
    )


def resolve_reject_table(
    scenario: Scenario, trace: tuple[TraceEntry, ...] = ()
) -> RejectShareTable | None:
    """Semantic verification's reject-share table, when the scenario names one; a
    token-tree workload is refused (its rounds replay their captured acceptance)."""
    config = scenario.verification
    if not config.semantic:
        return None
    if any(e.tree_rounds for e in trace):
        raise ConfigError(
            "verification.rule",
            "semantic verification judges a chain's mismatches; this workload replays "
            "captured token-tree rounds",
        )
    return None if config.table is None else load_reject_table(config.table)


def resolve_policies(scenario: Scenario) -> ResolvedPolicies:
    """The scenario's policy specs; ``wisp`` batching's coefficients from its params, else
    from the first server pool's wisp cost-model profile."""
    config = scenario.policies
    batching = config.batching
    if batching.name == "wisp":
        cost = scenario.auto_topology.servers[0].cost_model
        params = wisp_batching_params(
            batching.params,
            cost.profile if cost.kind == "wisp" else None,
            field="policies.batching",
            fallback_field="auto_topology.servers[0].cost_model.profile",
            needs=WISP_NEEDS,
        )
        batching = PolicySpec(batching.name, types.MappingProxyType(params))
    stop = scenario.stop_predictor.policy if scenario.stop_predictor is not None else None
    return ResolvedPolicies(config.routing, batching, config.window, stop)


def _cost(
    cfg: CostModelConfig, model: str, hardware: str, where: str, model_field: str
) -> CostModel:
    """A pool's cost model; errors name the pool's field (``...devices[0].hardware``). A
    profile that says it is the other role's (a drafter's on a server pool, a target's
    on a device pool) is refused at ``cost_model.profile``."""
    try:
        cost = build_cost_model(cfg.kind, model, hardware, cfg.profile, f"{where}.cost_model")
        if cfg.kind != "roofline" and cfg.profile is not None:
            device = ".devices[" in where
            user = "a device pool's cost model" if device else "a server pool's cost model"
            check_role(profile_info(cfg.profile), "draft" if device else "target", user)
        return cost
    except ConfigError as exc:
        if exc.path.startswith(f"{where}.cost_model."):  # its kind, its missing profile
            raise
        field = {"model": model_field, "hardware": "hardware"}.get(exc.path, "cost_model.profile")
        raise at_field(exc, f"{where}.{field}", cfg.profile) from exc


def _link(scenario: Scenario, name: str) -> Link:
    cfg = scenario.links[name]
    return Link(
        rtt_s=cfg.rtt_ms / 1000.0,
        jitter_s=cfg.jitter_ms / 1000.0,
        bandwidth_bytes_per_s=cfg.bandwidth_mbps * 1e6 / 8.0,
        loss_rate=cfg.loss_rate,
        retransmit_timeout_s=cfg.retransmit_timeout_ms / 1000.0,
    )


def resolve_device_pools(scenario: Scenario) -> tuple[ResolvedDevicePool, ...]:
    """Each device pool's draft cost model, vocabulary size and link, in pool order."""
    pools: list[ResolvedDevicePool] = []
    for pool_index, pool in enumerate(scenario.auto_topology.devices):
        where = f"auto_topology.devices[{pool_index}]"
        cost = _cost(pool.cost_model, pool.draft_model, pool.hardware, where, "draft_model")
        try:
            arch = load_architecture(pool.draft_model)
        except ConfigError as exc:
            raise at_field(exc, f"{where}.draft_model") from exc
        link = _link(scenario, pool.link)
        pools.append(ResolvedDevicePool(cost, arch.vocab_size, link, arch.hidden_size))
    return tuple(pools)


def resolve_server_pools(scenario: Scenario, colocated: bool) -> tuple[ResolvedServerPool, ...]:
    """Each server pool's target cost model and, with ``colocated``, its co-located draft."""
    draft_model = scenario.auto_topology.devices[0].draft_model
    pools: list[ResolvedServerPool] = []
    for pool_index, spool in enumerate(scenario.auto_topology.servers):
        where = f"auto_topology.servers[{pool_index}]"
        target = _cost(spool.cost_model, spool.target_model, spool.hardware, where, "target_model")
        draft = None
        if colocated:
            draft = _cost(CostModelConfig(), draft_model, spool.hardware, where, "hardware")
        pools.append(ResolvedServerPool(target, draft))
    return tuple(pools)
