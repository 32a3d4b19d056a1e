"""Build the simulator's parts from a resolved scenario: entities, policies, models.

Resolving (:func:`edgespec.sim.setup.resolve.resolve`: every preset, profile and data
file loaded, errors at the scenario field) runs whole first; :func:`build_run` then
builds every part of a run from the resolved form in one pass, with no file loading.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from edgespec.policies.fusing import fusing
from edgespec.policies.interfaces import BatchingPolicy, RoutingPolicy, WindowPolicy
from edgespec.policies.registry import build_policy_at
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.sim.model.acceptance import AcceptanceModel
from edgespec.sim.model.entities import DeviceState, ServerState
from edgespec.sim.model.layout import Layout
from edgespec.sim.model.network import Link
from edgespec.sim.model.rng import spawn_streams
from edgespec.sim.model.semantic import DeviceSemantics, device_semantics
from edgespec.sim.model.stop_model import StopModel
from edgespec.sim.setup.cells import select_cells
from edgespec.sim.setup.lengths import LengthTable
from edgespec.sim.setup.pools import DeviceSpec, ServerSpec
from edgespec.sim.setup.resolve import (
    ResolvedPolicies,
    ResolvedScenario,
    resolve,
    resolve_policies,
)
from edgespec.sim.setup.scenario import Scenario
from edgespec.sim.setup.sources import check_replayable
from edgespec.sim.setup.topology import expand_topology
from edgespec.sim.setup.wireless import device_link, devices_per_link
from edgespec.sim.setup.workload import TraceEntry


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
    resolved: ResolvedScenario, policies: Policies | None = None, cells: Sequence[int] | None = None
) -> BuiltRun:
    """Build the run of a resolved scenario (:func:`edgespec.sim.setup.resolve.resolve`),
    in one pass: ``policies`` (default: the resolved specs', from their registry names),
    the fleet of ``cells`` of a pinned scenario (all when ``None``;
    :mod:`edgespec.sim.setup.cells`), numbered from 0 in scenario order, each device with
    the stream of its index in the whole scenario, its layout, and the models.

    Brought ``policies`` whose window may fuse need a scenario resolved with
    ``colocated=True`` (their servers' co-located drafts): a ``ValueError`` otherwise."""
    policies, stop = build_parts(resolved, policies)
    devices, servers, layout = build_fleet(resolved, cells)
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


def build_parts(
    resolved: ResolvedScenario, policies: Policies | None = None
) -> tuple[Policies, StopModel | None]:
    """The parts of a run but its fleet (:func:`build_run`): ``policies`` (default: the
    resolved specs') and the stop model, if the scenario has a stop predictor (a request
    its policy has nothing to replay for is refused,
    :func:`~edgespec.sim.setup.sources.check_replayable`)."""
    scenario = resolved.scenario
    if policies is None:
        policies = policies_from(resolved.policies)
    # a policy that says it may fuse needs co-located drafts; one that says nothing runs as
    # its spec's registry entry (WINDOW_FUSES) said when the scenario was resolved (a
    # fused answer then stops the run, naming it): it was refused here, though the docs'
    # registration steps had said it never fuses
    if fusing(policies.window, scenario.mode) is True and not resolved.colocated:
        raise ValueError(
            f"window policy {policies.window!r} may run fused rounds: resolve the scenario "
            "with colocated=True"
        )
    stop = None
    if resolved.stop_features is not None and scenario.stop_predictor is not None:
        check_replayable(scenario, resolved.trace, resolved.acceptance)
        stop = StopModel(scenario.stop_predictor, policies.stop, resolved.stop_features)
    return policies, stop


def check_buildable(scenario: Scenario) -> ResolvedScenario:
    """``scenario`` resolved (every preset, profile and data file it names loaded,
    :func:`~edgespec.sim.setup.resolve.resolve`) and built as a run builds it, short of
    running (:func:`build_parts`, :func:`check_fleet`): what a sweep checks of each
    point, and a capacity search of its bounds, before any run. Its resolution returned."""
    resolved = resolve(scenario)
    build_parts(resolved)
    check_fleet(resolved)
    return resolved


def policies_from(specs: ResolvedPolicies) -> Policies:
    """The policy instances of resolved specs (errors at the scenario field that named
    them, :func:`edgespec.policies.registry.build_policy_at`)."""
    stop = None
    if specs.stop is not None:
        stop = build_policy_at("stop_predictor.policy", "stop", specs.stop)
    return Policies(
        build_policy_at("policies.routing", "routing", specs.routing),
        build_policy_at("policies.batching", "batching", specs.batching),
        build_policy_at("policies.window", "window", specs.window),
        stop,
    )


def build_policies(scenario: Scenario) -> Policies:
    """The scenario's policies from their registry names (a caller that replaces one of
    them and runs :func:`edgespec.sim.simulator.simulate` with the rest)."""
    return policies_from(resolve_policies(scenario))


def build_fleet(
    resolved: ResolvedScenario, cells: Sequence[int] | None = None
) -> tuple[list[DeviceState], list[ServerState], Layout]:
    """The devices and servers of ``cells`` (all when ``None``), each device with its link,
    draft cost and RNG stream (and semantic verification's share), each server with its
    costs and limits (a co-located draft when resolved ``colocated``); and their layout."""
    scenario = resolved.scenario
    all_devices, all_servers = expand_topology(scenario)
    device_specs, server_specs, layout = select_cells(scenario, all_devices, all_servers, cells)
    streams = spawn_streams(scenario.seed, "device", layout.device_global)
    channels = device_channels(resolved, device_specs, devices_per_link(all_devices))
    devices: list[DeviceState] = []
    for local_id, (spec, (link, semantics)) in enumerate(zip(device_specs, channels, strict=True)):
        pool = resolved.device_pools[spec.pool_index]
        device = DeviceState(
            local_id, spec.slo_class, link, pool.draft_cost, pool.vocab_size, streams[local_id]
        )
        if semantics is not None:
            device.semantic = semantics
        devices.append(device)
    return devices, fleet_servers(resolved, server_specs), layout


def check_fleet(resolved: ResolvedScenario) -> None:
    """The whole fleet of ``resolved`` built as :func:`build_fleet` builds it, short of the
    devices' random streams and states, which cannot fail and are most of its time (1.8 s
    of 2.2 s for bench-cells-100k's 100,000 devices): every device's link and semantics
    (:func:`device_channels`: a semantic device's link the head cannot describe), every
    server (:func:`fleet_servers`)."""
    all_devices, all_servers = expand_topology(resolved.scenario)
    device_channels(resolved, all_devices, devices_per_link(all_devices))
    fleet_servers(resolved, all_servers)


def device_channels(
    resolved: ResolvedScenario, specs: Sequence[DeviceSpec], counts: Counter[str]
) -> list[tuple[Link, DeviceSemantics | None]]:
    """Each device's link (its own uplink rate on a wireless one,
    :func:`~edgespec.sim.setup.wireless.device_link`; ``counts``: the scenario's devices
    per link) and, under semantic verification, its semantics on that link (the head's
    share on its channel; one per distinct link and hidden size, as a wired pool's
    devices have)."""
    scenario = resolved.scenario
    verification = scenario.verification
    known: dict[tuple[Link, int], DeviceSemantics] = {}
    channels: list[tuple[Link, DeviceSemantics | None]] = []
    for spec in specs:
        pool = resolved.device_pools[spec.pool_index]
        link = device_link(scenario, spec, pool.link, spec.device_id, counts)
        semantics = None
        if verification.semantic:
            key = (link, pool.hidden_size)
            if key not in known:
                known[key] = device_semantics(
                    verification, link, pool.hidden_size, resolved.reject_table
                )
            semantics = known[key]
        channels.append((link, semantics))
    return channels


def fleet_servers(resolved: ResolvedScenario, specs: Sequence[ServerSpec]) -> list[ServerState]:
    """The servers of ``specs``, numbered from 0, each with its pool's costs and limits."""
    servers: list[ServerState] = []
    for local_id, spec in enumerate(specs):
        spool = resolved.server_pools[spec.pool_index]
        servers.append(
            ServerState(
                local_id,
                spool.target_cost,
                spool.colocated_draft,
                spec.pool.kv_budget_tokens,
                spec.pool.max_batch_size,
                spec.pool.max_batch_tokens,
                spec.pool.prefix_cache,
                spec.pool.batch_pricing == "padded",
                spec.pool.prefill_part_tokens,
            )
        )
    return servers
