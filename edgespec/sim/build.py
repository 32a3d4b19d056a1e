"""Build the simulator's parts from a validated Scenario: entities, policies, models."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edgespec.config import ConfigError, ConfigFileError
from edgespec.policies.interfaces import BatchingPolicy, RoutingPolicy, WindowPolicy
from edgespec.policies.registry import PolicyConfigError, build_policy
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.sim.acceptance import (
    AcceptanceModel,
    DecayAcceptance,
    IidAcceptance,
    TraceAcceptance,
)
from edgespec.sim.cells import Layout, select_cells
from edgespec.sim.cost_models import (
    CostModel,
    build_cost_model,
    load_architecture,
    load_wisp_coefficients,
)
from edgespec.sim.entities import DeviceState, ServerState
from edgespec.sim.network import Link
from edgespec.sim.rng import spawn_streams
from edgespec.sim.scenario import CostModelConfig, Scenario
from edgespec.sim.stop_model import ReplayFeatures, StopModel
from edgespec.sim.topology import expand_topology
from edgespec.sim.workload import (
    LengthTable,
    TraceEntry,
    bundled_traces,
    load_length_table,
    load_trace,
    resolve_trace,
)


@dataclass(frozen=True, slots=True)
class Policies:
    routing: RoutingPolicy
    batching: BatchingPolicy
    window: WindowPolicy
    stop: DraftStopPolicy | None = None
    """Stop-at-first-predicted-rejection drafting, replayed on trace features (optional)."""


def build_policies(scenario: Scenario) -> Policies:
    built: dict[str, Any] = {}
    for kind in ("routing", "batching", "window"):
        spec = getattr(scenario.policies, kind)
        params = dict(spec.params)
        if kind == "batching" and spec.name == "wisp":
            params = _wisp_params(scenario, params)
        try:
            built[kind] = build_policy(kind, spec.name, params)
        except PolicyConfigError as exc:
            raise ConfigError(f"policies.{kind}", str(exc)) from exc
    stop = None
    config = scenario.stop_predictor
    if config is not None and config.policy is not None:
        try:
            stop = build_policy("stop", config.policy.name, config.policy.params)
        except PolicyConfigError as exc:
            raise ConfigError("stop_predictor.policy", str(exc)) from exc
    return Policies(built["routing"], built["batching"], built["window"], stop)


def build_stop_model(
    scenario: Scenario,
    policies: Policies,
    trace: tuple[TraceEntry, ...],
    acceptance: AcceptanceModel,
) -> StopModel | None:
    """The scenario's stop predictor over every acceptance sequence with features (the
    workload trace's and the trace-acceptance pool's), or ``None`` without one."""
    config = scenario.stop_predictor
    if config is None:
        return None
    if scenario.mode != "distributed":
        raise ConfigError("stop_predictor", f"applies to distributed drafting, not {scenario.mode}")
    found: list[ReplayFeatures] = []
    sources = [(e.acceptance_seq, e.draft_features, e.rejection_features) for e in trace]
    if isinstance(acceptance, TraceAcceptance):
        pool = acceptance
        sources += zip(pool.pool, pool.pool_features, pool.pool_rejections, strict=False)
    for seq, rows, after in sources:
        if seq is not None and rows is not None:
            found.append(ReplayFeatures(seq, rows, after))
    return StopModel(config, policies.stop, found)


def _at_field(exc: ConfigError, path: str) -> ConfigError:
    """``exc``, raised loading a preset or profile file, reported at the scenario field
    ``path`` that named it: a file's error (:class:`ConfigFileError`: missing, not YAML)
    keeps its file and line; a field's error keeps its message, not its field (the loader's
    own name for it, e.g. ``hardware``)."""
    return ConfigError(path, str(exc) if isinstance(exc, ConfigFileError) else exc.message)


def _wisp_params(scenario: Scenario, params: dict[str, Any]) -> dict[str, Any]:
    """WISP's estimator T̂: the coefficients given, or those of ``profile``, or else the
    profile of the first server pool when its cost model is ``wisp`` (the simulated
    verifier's own Eq. 19 fit)."""
    if "a_s" in params:
        return params
    partial = [k for k in ("b_compute_s", "b_read_s", "c_s") if k in params]
    if partial:  # a profile would silently override them
        raise ConfigError(
            "policies.batching.params",
            f"wisp coefficient(s) {', '.join(partial)} given without a_s: give all four "
            "(a_s, b_compute_s, b_read_s, c_s), or a profile alone",
        )
    profile = params.pop("profile", None)
    where = "policies.batching.params.profile"
    if profile is None:
        cost = scenario.auto_topology.servers[0].cost_model
        if cost.kind != "wisp" or cost.profile is None:
            raise ConfigError(
                where,
                "wisp batching needs Eq. 19 coefficients: give a profile (or a_s, "
                "b_compute_s, b_read_s, c_s), or a server pool with a wisp cost model",
            )
        profile, where = cost.profile, "auto_topology.servers[0].cost_model.profile"
    try:
        coefficients = load_wisp_coefficients(str(profile))
    except ConfigError as exc:
        raise _at_field(exc, where) from exc
    return {**params, **dataclasses.asdict(coefficients)}


def build_acceptance(scenario: Scenario, trace: tuple[TraceEntry, ...] = ()) -> AcceptanceModel:
    """The scenario's acceptance model. ``kind: trace`` without ``traces`` replays the
    bundled real traces (``edgespec/data/traces/*.jsonl``) for requests that carry no
    ``acceptance_seq`` of their own (sequences are assigned round-robin by request)."""
    acc = scenario.acceptance
    if acc.kind == "iid":
        return IidAcceptance(acc.alpha)
    if acc.kind == "decay":
        return DecayAcceptance(acc.rates)
    names = [str(p) for p in bundled_traces()] if not acc.traces else list(acc.traces)
    pool: list[tuple[int, ...]] = []
    features: list[tuple[tuple[float, ...], ...] | None] = []
    rejections: list[Mapping[int, tuple[tuple[float, ...], ...]] | None] = []
    for i, name in enumerate(names):
        try:
            entries = load_trace(resolve_trace(name))
        except ConfigError as exc:
            raise ConfigError(f"acceptance.traces[{i}]", str(exc)) from exc
        if any(e.tree_rounds for e in entries):
            raise ConfigError(
                f"acceptance.traces[{i}]",
                "a token-tree trace replays its captured rounds only as the workload "
                "(workload: {kind: trace, trace: FILE})",
            )
        kept = [e for e in entries if e.acceptance_seq]
        pool.extend(e.acceptance_seq for e in kept if e.acceptance_seq)
        features.extend(e.draft_features for e in kept)
        rejections.extend(e.rejection_features for e in kept)
    if acc.traces and not pool:
        raise ConfigError("acceptance.traces", "the traces hold no acceptance_seq")
    if not pool and (not trace or any(e.acceptance_seq is None for e in trace)):
        raise ConfigError(
            "acceptance.traces",
            "trace acceptance needs acceptance_seq: none in the workload, none given here, "
            "and none bundled in edgespec/data/traces/",
        )
    return TraceAcceptance(tuple(pool), tuple(features), tuple(rejections))


def _link(scenario: Scenario, name: str) -> Link:
    cfg = scenario.links[name]
    return Link(
        rtt_s=cfg.rtt_ms / 1000.0,
        jitter_s=cfg.jitter_ms / 1000.0,
        bandwidth_bytes_per_s=cfg.bandwidth_mbps * 1e6 / 8.0,
        loss_rate=cfg.loss_rate,
        retransmit_timeout_s=cfg.retransmit_timeout_ms / 1000.0,
    )


def _cost(
    cfg: CostModelConfig, model: str, hardware: str, where: str, model_field: str
) -> CostModel:
    """Build a pool's cost model; errors name the pool's field (``...devices[0].hardware``)."""
    try:
        return build_cost_model(cfg.kind, model, hardware, cfg.profile, where)
    except ConfigError as exc:
        field = {"model": model_field, "hardware": "hardware"}.get(exc.path, "cost_model.profile")
        raise _at_field(exc, f"{where}.{field}") from exc


def build_entities(
    scenario: Scenario, colocated: bool | None = None
) -> tuple[list[DeviceState], list[ServerState]]:
    """Expand ``auto_topology`` and give each device its link, draft cost and RNG stream.

    With ``colocated`` (default: in ``mode: fused``) each server gets a co-located draft
    for fused rounds: the first device pool's draft model on the server's hardware
    (roofline), run on the engine that verifies (:mod:`edgespec.sim.fused_run`).
    """
    devices, servers, _ = build_fleet(scenario, None, colocated)
    return devices, servers


def build_fleet(
    scenario: Scenario, cells: Sequence[int] | None = None, colocated: bool | None = None
) -> tuple[list[DeviceState], list[ServerState], Layout]:
    """:func:`build_entities` for the cells ``cells`` of a pinned scenario (all when
    ``None``; :mod:`edgespec.sim.cells`), numbered from 0 in scenario order, each device
    with the stream of its index in the whole scenario; and their layout."""
    if colocated is None:
        colocated = scenario.mode == "fused"
    all_devices, all_servers = expand_topology(scenario)
    device_specs, server_specs, layout = select_cells(scenario, all_devices, all_servers, cells)
    streams = spawn_streams(scenario.seed, "device", layout.device_global)
    per_pool: list[tuple[CostModel, int, Link]] = []
    for pool_index, pool in enumerate(scenario.auto_topology.devices):
        where = f"auto_topology.devices[{pool_index}]"
        cost = _cost(pool.cost_model, pool.draft_model, pool.hardware, where, "draft_model")
        try:
            vocab = load_architecture(pool.draft_model).vocab_size
        except ConfigError as exc:
            raise _at_field(exc, f"{where}.draft_model") from exc
        per_pool.append((cost, vocab, _link(scenario, pool.link)))
    devices: list[DeviceState] = []
    for local_id, spec in enumerate(device_specs):
        cost, vocab, link = per_pool[spec.pool_index]
        devices.append(DeviceState(local_id, spec.slo_class, link, cost, vocab, streams[local_id]))
    draft_model = scenario.auto_topology.devices[0].draft_model
    servers: list[ServerState] = []
    server_costs: dict[int, tuple[CostModel, CostModel | None]] = {}
    for pool_index, spool in enumerate(scenario.auto_topology.servers):
        where = f"auto_topology.servers[{pool_index}]"
        target = _cost(spool.cost_model, spool.target_model, spool.hardware, where, "target_model")
        fused_draft = None
        if colocated:
            fused_draft = _cost(CostModelConfig(), draft_model, spool.hardware, where, "hardware")
        server_costs[pool_index] = (target, fused_draft)
    for local_id, sspec in enumerate(server_specs):
        target, fused_draft = server_costs[sspec.pool_index]
        servers.append(
            ServerState(
                local_id,
                target,
                fused_draft,
                sspec.pool.kv_budget_tokens,
                sspec.pool.max_batch_size,
                sspec.pool.max_batch_tokens,
                sspec.pool.prefix_cache,
            )
        )
    return devices, servers, layout


def build_lengths(scenario: Scenario) -> LengthTable | None:
    wl = scenario.workload
    if wl.kind == "trace":
        return None
    if wl.prompt_tokens:
        return LengthTable("inline", wl.prompt_tokens, wl.output_tokens)
    return load_length_table(wl.dataset)


def build_trace(scenario: Scenario) -> tuple[TraceEntry, ...]:
    if scenario.workload.kind != "trace" or scenario.workload.trace is None:
        return ()
    try:
        entries = load_trace(resolve_trace(scenario.workload.trace))
    except ConfigError as exc:
        raise ConfigError("workload.trace", str(exc)) from exc
    for entry in entries:
        if entry.slo_class is not None and entry.slo_class not in scenario.slo_classes:
            raise ConfigError(
                "workload.trace",
                f"request {entry.request_id!r} has unknown slo_class {entry.slo_class!r}",
            )
    return entries


ProgressCallback = Callable[[float], None]
