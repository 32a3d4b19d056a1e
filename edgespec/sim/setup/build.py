"""Build the simulator's parts from a validated Scenario: entities, policies, models.

:func:`build_run` resolves the scenario once (:mod:`edgespec.sim.setup.resolve`: every
preset, profile and data file loaded, errors at the scenario field) and builds every part
of a run from that in one pass. The ``build_*`` functions build one part each, resolving
only what that part needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edgespec.config import ConfigError, PolicySpec
from edgespec.policies.fusing import fusing
from edgespec.policies.interfaces import BatchingPolicy, RoutingPolicy, WindowPolicy
from edgespec.policies.registry import PolicyConfigError, UnknownParamsError, build_policy
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.entities import DeviceState, ServerState
from edgespec.sim.model.layout import Layout
from edgespec.sim.model.rng import spawn_streams
from edgespec.sim.model.semantic import RejectShareTable, device_semantics
from edgespec.sim.model.stop_model import ReplayFeatures, StopModel
from edgespec.sim.setup.cells import select_cells
from edgespec.sim.setup.resolve import (
    ResolvedDevicePool,
    ResolvedPolicies,
    ResolvedScenario,
    ResolvedServerPool,
    resolve_device_pools,
    resolve_policies,
    resolve_reject_table,
    resolve_server_pools,
    resolve_with,
)
from edgespec.sim.setup.scenario import Scenario
from edgespec.sim.setup.sources import (
    load_acceptance,
    load_lengths,
    load_workload_trace,
    stop_features,
)
from edgespec.sim.setup.topology import expand_topology
from edgespec.sim.setup.wireless import device_link, devices_per_link
from edgespec.sim.setup.workload import LengthTable, TraceEntry


@dataclass(frozen=True, slots=True)
class Policies:
    routing: RoutingPolicy
    batching: BatchingPolicy
    window: WindowPolicy
    stop: DraftStopPolicy | None = None
    """Stop-at-first-predicted-rejection drafting, replayed on trace features (optional)."""


@dataclass(frozen=True, slots=True)
class BuiltRun:
    """Every part of one run (:func:`build_run`), built from one resolution."""

    policies: Policies
    devices: list[DeviceState]
    servers: list[ServerState]
    layout: Layout
    trace: tuple[TraceEntry, ...]
    acceptance: AcceptanceModel
    lengths: LengthTable | None
    stop: StopModel | None


def build_run(
    scenario: Scenario, policies: Policies | None = None, cells: Sequence[int] | None = None
) -> BuiltRun:
    """Resolve ``scenario`` once and build its run: ``policies`` (default: the scenario's,
    from their registry names), the fleet of ``cells`` (all when ``None``, as
    :func:`build_fleet`), with co-located drafts when fused rounds are possible
    (:func:`edgespec.policies.fusing.fusing` of the window and the mode), and its models."""
    specs = None
    if policies is None:
        specs = resolve_policies(scenario)
        policies = policies_from(specs)
    colocated = fusing(policies.window, scenario.mode) is not False
    resolved = resolve_with(scenario, colocated, specs)
    devices, servers, layout = build_fleet(resolved, cells, colocated)
    stop = _stop_model(scenario, policies, resolved.stop_features)
    return BuiltRun(
        policies,
        devices,
        servers,
        layout,
        resolved.trace,
        resolved.acceptance,
        resolved.lengths,
        stop,
    )


def _policy(field: str, kind: str, spec: PolicySpec) -> Any:
    """Policy ``spec`` of ``kind``; its errors at ``field`` (an unknown parameter's at
    ``field.params``, with the parameters the policy takes)."""
    try:
        return build_policy(kind, spec.name, spec.params)
    except UnknownParamsError as exc:
        raise ConfigError(f"{field}.params", str(exc)) from exc
    except PolicyConfigError as exc:
        raise ConfigError(field, str(exc)) from exc


def policies_from(specs: ResolvedPolicies) -> Policies:
    """The policy instances of resolved specs."""
    stop = None if specs.stop is None else _policy("stop_predictor.policy", "stop", specs.stop)
    return Policies(
        _policy("policies.routing", "routing", specs.routing),
        _policy("policies.batching", "batching", specs.batching),
        _policy("policies.window", "window", specs.window),
        stop,
    )


def build_policies(scenario: Scenario) -> Policies:
    return policies_from(resolve_policies(scenario))


def build_stop_model(
    scenario: Scenario,
    policies: Policies,
    trace: tuple[TraceEntry, ...],
    acceptance: AcceptanceModel,
) -> StopModel | None:
    """The scenario's stop predictor over every acceptance sequence with features (the
    workload trace's and the trace-acceptance pool's), or ``None`` without one."""
    return _stop_model(scenario, policies, stop_features(scenario, trace, acceptance))


def _stop_model(
    scenario: Scenario, policies: Policies, features: tuple[ReplayFeatures, ...] | None
) -> StopModel | None:
    if features is None or scenario.stop_predictor is None:
        return None
    return StopModel(scenario.stop_predictor, policies.stop, features)


def build_acceptance(scenario: Scenario, trace: tuple[TraceEntry, ...] = ()) -> AcceptanceModel:
    """The scenario's acceptance model (:func:`edgespec.sim.setup.sources.load_acceptance`)."""
    return load_acceptance(scenario, trace)


def build_lengths(scenario: Scenario) -> LengthTable | None:
    return load_lengths(scenario)


def build_trace(scenario: Scenario) -> tuple[TraceEntry, ...]:
    return load_workload_trace(scenario)


def build_entities(
    scenario: Scenario, colocated: bool | None = None
) -> tuple[list[DeviceState], list[ServerState]]:
    """Expand ``auto_topology`` and give each device its link, draft cost and RNG stream.

    With ``colocated`` (default: in ``mode: fused``) each server gets a co-located draft
    for fused rounds: the first device pool's draft model on the server's hardware
    (roofline), run on the engine that verifies (:mod:`edgespec.sim.loop.fused`).
    """
    devices, servers, _ = build_fleet(scenario, None, colocated)
    return devices, servers


def build_fleet(
    scenario: Scenario | ResolvedScenario,
    cells: Sequence[int] | None = None,
    colocated: bool | None = None,
) -> tuple[list[DeviceState], list[ServerState], Layout]:
    """:func:`build_entities` for the cells ``cells`` of a pinned scenario (all when
    ``None``; :mod:`edgespec.sim.setup.cells`), numbered from 0 in scenario order, each device
    with the stream of its index in the whole scenario; and their layout. A resolved
    scenario is built as it was resolved (``colocated``: ``None`` or as resolved)."""
    if isinstance(scenario, ResolvedScenario):
        if colocated is not None and colocated != scenario.colocated:
            raise ValueError(f"resolved with colocated={scenario.colocated}, not {colocated}")
        return _fleet(
            scenario.scenario,
            scenario.device_pools,
            scenario.server_pools,
            cells,
            scenario.reject_table,
        )
    if colocated is None:
        colocated = scenario.mode == "fused"
    devices = resolve_device_pools(scenario)
    servers = resolve_server_pools(scenario, colocated)
    return _fleet(scenario, devices, servers, cells, resolve_reject_table(scenario))


def _fleet(
    scenario: Scenario,
    device_pools: Sequence[ResolvedDevicePool],
    server_pools: Sequence[ResolvedServerPool],
    cells: Sequence[int] | None,
    reject_table: RejectShareTable | None = None,
) -> tuple[list[DeviceState], list[ServerState], Layout]:
    all_devices, all_servers = expand_topology(scenario)
    device_specs, server_specs, layout = select_cells(scenario, all_devices, all_servers, cells)
    streams = spawn_streams(scenario.seed, "device", layout.device_global)
    counts = devices_per_link(all_devices)
    verification = scenario.verification
    devices: list[DeviceState] = []
    for local_id, spec in enumerate(device_specs):
        pool = device_pools[spec.pool_index]
        link = device_link(scenario, spec, pool.link, layout.device_global[local_id], counts)
        device = DeviceState(
            local_id,
            spec.slo_class,
            link,
            pool.draft_cost,
            pool.vocab_size,
            streams[local_id],
        )
        if verification.semantic:  # the head's share on this device's own channel
            device.semantic = device_semantics(verification, link, pool.hidden_size, reject_table)
        devices.append(device)
    servers: list[ServerState] = []
    for local_id, sspec in enumerate(server_specs):
        spool = server_pools[sspec.pool_index]
        servers.append(
            ServerState(
                local_id,
                spool.target_cost,
                spool.colocated_draft,
                sspec.pool.kv_budget_tokens,
                sspec.pool.max_batch_size,
                sspec.pool.max_batch_tokens,
                sspec.pool.prefix_cache,
            )
        )
    return devices, servers, layout
