"""Resolving a scenario whole (edgespec.sim.setup.resolve) and then building a run from it
(edgespec.sim.setup.build.build_run): the same parts as the separate builds, every file
loaded once, no loading while building, whether fused rounds are possible known from the
window policy's spec, errors at the scenario field."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from edgespec.config import ConfigError
from edgespec.hardware import wisp
from edgespec.policies import registry
from edgespec.policies.fusing import fusing
from edgespec.policies.routing import RoundRobinRouting
from edgespec.policies.window import StaticWindow
from edgespec.policies.wisp import WispBatching
from edgespec.sim.model.entities import DeviceState, ServerState
from edgespec.sim.model.stop_model import StopModel
from edgespec.sim.setup import resolve, sources
from edgespec.sim.setup.build import BuiltRun, Policies, build_fleet, build_policies, build_run
from edgespec.sim.setup.scenario import Scenario, scenario_from_dict
from edgespec.sim.setup.workload import bundled_traces
from edgespec.sim.simulator import simulate
from tests.sim import parts
from tests.sim.helpers import tiny_scenario
from tests.sim.test_stop_predictor import features
from tests.sim.test_stop_predictor import scenario as stop_scenario

ROWS = [
    {"request_id": f"r{i}", "arrival_ms": 40.0 * i, "prompt_tokens": 4, "output_tokens": 9,
     "drafter_id": i % 2, "acceptance_seq": [1, 1, 1, 0, 1, 1, 0, 1, 1],
     "draft_features": features([0.9, 0.9, 0.2, 0.9, 0.9, 0.9, 0.3, 0.9, 0.9])}
    for i in range(4)
]  # fmt: skip
BUNDLED = Path(__file__).parent.parent / "acceptance_trace.jsonl"
WISP = "policies.batching={name: wisp, params: {profile: a100-qwen3-32b}}"


def _scenario(case: str, tmp_path: Path) -> Scenario:
    if case == "stop-predictor":
        return scenario_from_dict(stop_scenario(tmp_path, ROWS))
    overrides = {
        "distributed": [],
        "fused": ["mode=fused"],
        "awc-wisp-trace-acceptance": [
            "policies.window.name=awc",
            WISP,
            f"acceptance={{kind: trace, traces: [{BUNDLED}]}}",
        ],
        "cells": [
            "auto_topology.cells=2",
            "workload.prompt_tokens=null",
            "workload.output_tokens=null",
        ],
    }[case]
    return scenario_from_dict(tiny_scenario(), overrides)


def _separately(scenario: Scenario, cells: Sequence[int] | None) -> BuiltRun:
    """The parts built one call at a time, fused rounds known from the built window."""
    chosen = build_policies(scenario)
    colocated = fusing(chosen.window, scenario.mode) is not False
    devices, servers, layout = parts.build_fleet(scenario, cells, colocated)
    trace = parts.build_trace(scenario)
    acceptance = parts.build_acceptance(scenario, trace)
    stop = parts.build_stop_model(scenario, chosen, trace, acceptance)
    lengths = parts.build_lengths(scenario)
    return BuiltRun(chosen, devices, servers, layout, trace, acceptance, lengths, stop)


def _device(d: DeviceState) -> tuple[Any, ...]:
    draws = [d.rng.next() for _ in range(3)]
    return (d.device_id, d.slo_class, d.link, d.draft_cost, d.vocab_size, draws)


def _server(s: ServerState) -> tuple[Any, ...]:
    limits = (s.kv_budget, s.max_batch_size, s.max_batch_tokens, s.prefix_cache)
    return (s.server_id, s.cost, s.draft_cost, *limits)


def _stop(stop: StopModel | None, run: BuiltRun) -> tuple[Any, ...] | None:
    if stop is None:
        return None
    keeps: list[Any] = []
    for entry in run.trace:
        found = stop.keeps_for(entry.acceptance_seq)
        after = {} if found is None else {p: a.tolist() for p, a in found.after.items()}
        keeps.append(None if found is None else (found.on_prefix.tolist(), after))
    return (stop.overhead_s, stop.tpr, stop.fpr, type(stop.policy), keeps)


@pytest.mark.parametrize(
    ("case", "cells"),
    [
        ("distributed", None),
        ("fused", None),
        ("awc-wisp-trace-acceptance", None),
        ("stop-predictor", None),
        ("cells", [1]),
    ],
)
def test_build_run_gives_the_parts_of_the_separate_builds(
    case: str, cells: list[int] | None, tmp_path: Path
) -> None:
    scenario = _scenario(case, tmp_path)
    run = build_run(resolve.resolve(scenario), cells=cells)
    alone = _separately(scenario, cells)
    for kind in ("routing", "batching", "window", "stop"):
        assert type(getattr(run.policies, kind)) is type(getattr(alone.policies, kind))
    assert getattr(run.policies.batching, "estimator", None) == getattr(
        alone.policies.batching, "estimator", None
    )
    assert [_device(d) for d in run.devices] == [_device(d) for d in alone.devices]
    assert [_server(s) for s in run.servers] == [_server(s) for s in alone.servers]
    assert run.layout == alone.layout
    assert (run.trace, run.acceptance, run.lengths) == (
        alone.trace,
        alone.acceptance,
        alone.lengths,
    )
    assert _stop(run.stop, run) == _stop(alone.stop, alone)
    colocated = case in ("fused", "awc-wisp-trace-acceptance")
    assert all((s.draft_cost is not None) == colocated for s in run.servers)
    if case == "stop-predictor":
        found = _stop(run.stop, run)
        assert found is not None and None not in found[-1]  # the trace's features replay
    if case == "cells":
        assert run.layout.cell_ids == (1,) and len(run.devices) == 6


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[str]:
    calls: list[str] = []
    real = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(str(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_build_run_loads_each_named_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "w.jsonl"
    trace.write_text(BUNDLED.read_text())
    overrides = [WISP, "policies.window.name=awc", f"workload={{kind: trace, trace: {trace}}}"]
    scenario = scenario_from_dict(tiny_scenario(), [*overrides, "acceptance.kind=trace"])
    profiles = _counting(monkeypatch, wisp, "load_wisp_coefficients")
    traces = _counting(monkeypatch, sources, "load_trace")
    costs = _counting(monkeypatch, resolve, "build_cost_model")
    run = build_run(resolve.resolve(scenario))
    assert profiles == ["a100-qwen3-32b"]
    bundled = [str(p) for p in bundled_traces()]
    assert sorted(traces) == sorted([str(trace), *bundled])  # the workload, the pool
    assert costs == ["roofline", "roofline", "roofline"]  # draft, target, co-located draft
    assert run.lengths is None and len(run.trace) > 0


def test_building_from_a_resolved_scenario_loads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = scenario_from_dict(tiny_scenario(mode="fused"), [WISP])
    resolved = resolve.resolve(scenario, colocated=True)
    assert resolved.policies.batching.params["a_s"] > 0

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("loaded while building")

    for module, name in [
        (resolve, "build_cost_model"),
        (resolve, "load_architecture"),
        (sources, "load_trace"),
        (sources, "load_length_table"),
        (wisp, "load_wisp_coefficients"),
    ]:
        monkeypatch.setattr(module, name, refuse)
    devices, servers, _ = build_fleet(resolved)
    assert len(devices) == 12 and all(s.draft_cost is not None for s in servers)
    run = build_run(resolved)
    assert len(run.devices) == 12 and isinstance(run.policies.batching, WispBatching)


@pytest.mark.parametrize(
    ("mode", "window", "colocated"),
    [
        ("distributed", "{name: static, params: {gamma: 3}}", False),
        ("distributed", "{name: static, params: {gamma: 3, fused: true}}", True),
        ("distributed", "{name: dynamic}", False),
        ("distributed", "{name: awc}", True),
        ("fused", "{name: static, params: {gamma: 3}}", True),
        ("centralized", "{name: static, params: {gamma: 3}}", False),  # awc: refused there
    ],
)
def test_whether_servers_get_a_colocated_draft_is_known_from_the_spec(
    mode: str, window: str, colocated: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resolving decides co-located drafts before any policy object exists: building a
    window policy while resolving is refused here."""
    scenario = scenario_from_dict(tiny_scenario(mode=mode), [f"policies.window={window}"])

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a policy built while resolving")

    with monkeypatch.context() as patched:
        patched.setattr(registry, "build_policy", refuse)
        resolved = resolve.resolve(scenario)
    assert resolved.colocated is colocated
    run = build_run(resolved)
    assert (fusing(run.policies.window, mode) is not False) == colocated
    assert all((s.draft_cost is not None) == colocated for s in run.servers)


def test_a_window_policy_registered_without_its_fusing_gets_colocated_drafts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(registry.WINDOW, "mine", lambda: StaticWindow(2))
    scenario = scenario_from_dict(tiny_scenario(), ["policies.window={name: mine}"])
    assert resolve.resolve(scenario).colocated is True


def test_brought_policies_that_may_fuse_need_colocated_drafts() -> None:
    scenario = scenario_from_dict(tiny_scenario())
    own = replace(build_policies(scenario), window=StaticWindow(3, fused=True))
    with pytest.raises(ValueError) as error:
        build_run(resolve.resolve(scenario), own)
    assert str(error.value) == (
        "window policy StaticWindow(gamma=3, fused=True) may run fused rounds: resolve the "
        "scenario with colocated=True"
    )
    run = build_run(resolve.resolve(scenario, colocated=True), own)
    assert run.policies is own and all(s.draft_cost is not None for s in run.servers)


def test_a_scenario_whose_policies_cannot_resolve_is_refused_with_brought_policies() -> None:
    """Resolving runs whole: a wisp batching without coefficients anywhere is an error
    even for a run that brings its own policies."""
    scenario = scenario_from_dict(tiny_scenario(), ["policies.batching.name=wisp"])
    own = Policies(
        RoundRobinRouting(),
        build_policies(scenario_from_dict(tiny_scenario())).batching,
        StaticWindow(3),
    )
    with pytest.raises(ConfigError, match="wisp batching needs Eq. 19 coefficients"):
        simulate(scenario, policies=own)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["auto_topology.devices.0.draft_model=gpt5"],
            "config field 'auto_topology.devices[0].draft_model': no models preset named 'gpt5'",
        ),
        (
            ["auto_topology.servers.0.hardware=tpu"],
            "config field 'auto_topology.servers[0].hardware': no hardware preset named 'tpu'",
        ),
        (
            ["workload.dataset=nope", "workload.prompt_tokens=null", "workload.output_tokens=null"],
            "config field 'workload.dataset': no length table 'nope'",
        ),
        (
            ["stop_predictor={confusion_tpr: 0.8, confusion_fpr: 0.1}", "mode=fused"],
            "config field 'stop_predictor': applies to distributed drafting, not fused",
        ),
    ],
)
def test_resolve_reports_at_the_scenario_field(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        resolve.resolve(scenario_from_dict(tiny_scenario(), overrides), colocated=False)
    assert str(error.value).startswith(message)
