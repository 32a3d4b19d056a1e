"""Building a scenario's parts (edgespec.sim.setup.build, sim.topology): the errors name the
scenario field (and trace or file) at fault; WISP's coefficients, the fused draft and the
class apportionment come from where the docs say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.config import ConfigError
from edgespec.policies.estimator import WispCoefficients
from edgespec.policies.registry import STOP
from edgespec.sim.model.acceptance import TraceAcceptance
from edgespec.sim.setup import sources
from edgespec.sim.setup.build import build_policies
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.setup.topology import expand_topology
from tests.sim.helpers import tiny_scenario
from tests.sim.parts import build_acceptance, build_entities, build_stop_model, build_trace

BUNDLED = Path(__file__).parent.parent / "acceptance_trace.jsonl"


def write_trace(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def row(request_id: str, **fields: Any) -> dict[str, Any]:
    base = {"request_id": request_id, "arrival_ms": 0, "prompt_tokens": 4, "output_tokens": 8}
    return {**base, "drafter_id": 0, **fields}


def error_of(build: Any, overrides: list[str], **sections: Any) -> str:
    with pytest.raises(ConfigError) as error:
        build(scenario_from_dict(tiny_scenario(**sections), overrides))
    return str(error.value)


def test_an_unknown_stop_policy_is_named_at_its_field() -> None:
    stop = {"policy": {"name": "oracle"}}
    assert error_of(build_policies, [], stop_predictor=stop) == (
        "config field 'stop_predictor.policy.name': unknown stop policy 'oracle'; "
        f"known: {sorted(STOP)}"
    )


def test_acceptance_trace_errors_name_the_trace(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    message = error_of(
        build_acceptance, [f"acceptance={{kind: trace, traces: [{BUNDLED}, {missing}]}}"]
    )
    assert message.startswith(f"config field 'acceptance.traces[1]': {missing}")
    plain = write_trace(tmp_path / "plain.jsonl", [row("a"), row("b")])
    assert error_of(build_acceptance, [f"acceptance={{kind: trace, traces: [{plain}]}}"]) == (
        "config field 'acceptance.traces': the traces hold no acceptance_seq"
    )


def test_a_workload_trace_request_of_an_unknown_class_is_named(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "w.jsonl", [row("r0"), row("r1", slo_class="gold")])
    assert error_of(build_trace, [f"workload={{kind: trace, trace: {trace}}}"]) == (
        f"config field 'workload.trace': {trace}:2: request 'r1' has slo_class 'gold', which "
        "slo_classes does not have (its classes: ['fast', 'slow']); add the class "
        "(slo_classes.gold=TOK_S, or null for no target; a trace request keeps its own class, "
        "so no pool's slo_mix needs it) or give the trace the scenario's classes (edgespec "
        "trace --slo-classes slow,fast)"
    )


def test_wisp_coefficients_given_are_used_as_given() -> None:
    params = {"a_s": 0.5, "b_compute_s": 0.25, "b_read_s": 0.125, "c_s": 2.0}
    batching = {"name": "wisp", "params": params}
    policies = build_policies(
        scenario_from_dict(tiny_scenario(), [f"policies.batching={json.dumps(batching)}"])
    )
    assert policies.batching.estimator == WispCoefficients(**params)  # type: ignore[attr-defined]


def test_a_server_profile_wisp_batching_falls_back_on_is_named_at_the_server() -> None:
    overrides = [
        "policies.batching.name=wisp",
        'auto_topology.servers.0.cost_model={kind: wisp, profile: "none.yaml"}',
    ]
    assert error_of(build_policies, overrides) == (
        "config field 'auto_topology.servers[0].cost_model.profile': none.yaml: file not found"
    )


def test_an_unknown_draft_model_of_a_roofline_pool_is_named_at_draft_model() -> None:
    message = error_of(build_entities, ["auto_topology.devices.0.draft_model=gpt5"])
    assert message.startswith(
        "config field 'auto_topology.devices[0].draft_model': no models preset named 'gpt5'"
    )


def test_fused_mode_gives_each_server_the_first_pools_draft() -> None:
    data = tiny_scenario(mode="fused")
    phones = data["auto_topology"]["devices"][0]
    data["auto_topology"]["devices"].append({**phones, "draft_model": "qwen3-8b", "count": 1})
    _, servers = build_entities(scenario_from_dict(data))
    _, alone = build_entities(scenario_from_dict(tiny_scenario(mode="fused")))
    assert servers[0].draft_cost is not None and servers[0].draft_cost == alone[0].draft_cost
    _, distributed = build_entities(scenario_from_dict(tiny_scenario()))
    assert distributed[0].draft_cost is None


def test_a_tie_in_the_class_apportionment_goes_to_the_earlier_class() -> None:
    overrides = ["auto_topology.devices.0.count=3"]
    devices, _ = expand_topology(scenario_from_dict(tiny_scenario(), overrides))
    assert [d.slo_class for d in devices] == ["slow", "slow", "fast"]


def test_wisp_batching_does_not_read_a_servers_profile_of_another_kind() -> None:
    overrides = [
        "policies.batching.name=wisp",
        "auto_topology.servers.0.cost_model={kind: zhu, profile: rtx4500-llama2-7b-zhu}",
    ]
    assert error_of(build_policies, overrides).startswith(
        "config field 'policies.batching.params.profile': wisp batching needs Eq. 19 coefficients"
    )


def test_a_stop_predictor_outside_distributed_drafting_is_refused() -> None:
    stop = {"confusion_tpr": 0.8, "confusion_fpr": 0.1}
    scenario = scenario_from_dict(tiny_scenario(mode="fused", stop_predictor=stop))
    with pytest.raises(ConfigError) as error:
        build_stop_model(scenario, build_policies(scenario), (), build_acceptance(scenario))
    assert str(error.value) == (
        "config field 'stop_predictor': applies to distributed drafting, not fused"
    )


def test_trace_acceptance_needs_a_sequence_for_every_workload_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "bundled_traces", list)
    rows = [row("r0", acceptance_seq=[1, 0, 1]), row("r1")]
    trace = write_trace(tmp_path / "w.jsonl", rows)
    scenario = scenario_from_dict(
        tiny_scenario(), [f"workload={{kind: trace, trace: {trace}}}", "acceptance.kind=trace"]
    )
    with pytest.raises(ConfigError) as error:
        build_acceptance(scenario, build_trace(scenario))
    assert str(error.value).startswith(
        "config field 'acceptance.traces': trace acceptance needs acceptance_seq: none in the"
    )
    whole = write_trace(tmp_path / "w.jsonl", rows[:1])
    scenario = scenario_from_dict(
        tiny_scenario(), [f"workload={{kind: trace, trace: {whole}}}", "acceptance.kind=trace"]
    )
    model = build_acceptance(scenario, build_trace(scenario))
    assert isinstance(model, TraceAcceptance) and model.pool == ()


@pytest.mark.parametrize("profile", [None, "a100-qwen3-32b"])
def test_wisp_coefficients_without_a_s_are_refused_not_overridden(profile: str | None) -> None:
    params: dict[str, Any] = {"b_read_s": 0.1, "c_s": 0.01}
    if profile is not None:
        params["profile"] = profile
    batching = {"name": "wisp", "params": params}
    assert error_of(build_policies, [f"policies.batching={json.dumps(batching)}"]) == (
        "config field 'policies.batching.params': wisp coefficient(s) b_read_s, c_s given "
        "without a_s: give all four (a_s, b_compute_s, b_read_s, c_s), or a profile alone"
    )
