from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.config import ConfigError
from edgespec.sim.setup import sources
from edgespec.sim.setup.scenario import load_scenario, scenario_from_dict
from edgespec.sim.setup.topology import expand_topology
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario


def test_default_scenario_loads_and_expands() -> None:
    scenario = load_scenario(None)
    devices, servers = expand_topology(scenario)
    assert (len(devices), len(servers)) == (200, 4)
    assert [d.slo_class for d in devices[:51:50]] == ["bronze", "silver"]
    assert devices[-1].slo_class == "platinum"


def test_slo_mix_is_apportioned_deterministically() -> None:
    data = tiny_scenario()
    data["auto_topology"]["devices"][0].update(count=5, slo_mix={"slow": 1, "fast": 2})
    devices, _ = expand_topology(scenario_from_dict(data))
    assert [d.slo_class for d in devices] == ["slow", "slow", "fast", "fast", "fast"]


def _devices(**fields: Any) -> dict[str, Any]:
    data = tiny_scenario()
    data["auto_topology"]["devices"][0].update(fields)
    return data


@pytest.mark.parametrize(
    ("data", "overrides", "message"),
    [
        (
            _devices(link="lan"),
            [],
            "config field 'auto_topology.devices[0].link': unknown link 'lan'; known: ['wan']",
        ),
        (
            _devices(count=0),
            [],
            "config field 'auto_topology.devices[0].count': must be >= 1, got 0",
        ),
        (
            _devices(slo_mix={"platinum": 1.0}),
            [],
            "config field 'auto_topology.devices[0].slo_mix.platinum': unknown SLO class",
        ),
        (
            _devices(cost_model={"kind": "wisp"}),
            [],
            "config field 'auto_topology.devices[0].cost_model.profile': cost model 'wisp' needs",
        ),
        (
            tiny_scenario(),
            ["duration_s=-1"],
            "config field 'duration_s': must be a finite number > 0",
        ),
        (
            tiny_scenario(),
            ["links.wan.loss_rate=1.5"],
            "config field 'links.wan.loss_rate': must be in [0, 0.99] (each message is resent "
            "until it arrives, 1/(1 - loss_rate) attempts on average), got 1.5",
        ),
        (
            tiny_scenario(),
            ["acceptance.rates=[0.5, 2]"],
            "config field 'acceptance.rates[1]': must be in [0, 1], got 2.0",
        ),
        (tiny_scenario(), ["mode=hybrid"], "config field 'mode': must be one of"),
        (
            tiny_scenario(),
            ["workload.kind=trace"],
            "config field 'workload.trace': workload kind 'trace' needs a trace file",
        ),
        (
            tiny_scenario(),
            ["workload.output_tokens=[3]"],
            "config field 'workload.output_tokens': has 1 entries but prompt_tokens has 4",
        ),
        (  # an empty list was taken as "not given": the dataset's table, the bundled traces
            tiny_scenario(),
            ["workload.prompt_tokens=[]", "workload.output_tokens=[]"],
            "config field 'workload.prompt_tokens': is empty: give at least one length, or "
            "leave both prompt_tokens and output_tokens out for dataset's",
        ),
        (
            {**tiny_scenario(), "workload": {"kind": "closed_loop", "output_tokens": [3]}},
            [],
            "config field 'workload.prompt_tokens': is missing: an inline length table needs "
            "both prompt_tokens and output_tokens",
        ),
        (
            tiny_scenario(),
            ["acceptance={kind: trace, traces: []}"],
            "config field 'acceptance.traces': is empty: name at least one trace (bundled name "
            "or JSONL path), or leave it out for the bundled ones",
        ),
        (
            tiny_scenario(),
            ["workload.thinktime=1"],
            "config field 'workload.thinktime': unknown field",
        ),
    ],
)
def test_validation_errors_name_the_field(
    data: dict[str, Any], overrides: list[str], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(data, overrides)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["policies.window.name=adaptive"],
            "config field 'policies.window.name': unknown window policy 'adaptive'",
        ),
        (
            ["policies.batching={name: lab, params: {ratio: 2}}"],
            "config field 'policies.batching.params': batching policy 'lab' has no parameter(s) "
            "['ratio']; known: ['max_length_ratio']",
        ),
        (
            [
                "auto_topology={devices: [{hardware: tpu, link: wan, slo_mix: {slow: 1}}],"
                " servers: [{}]}"
            ],
            "config field 'auto_topology.devices[0].hardware': no hardware preset named 'tpu'",
        ),
        (
            ["auto_topology.servers=[{target_model: gpt5}]"],
            "config field 'auto_topology.servers[0].target_model': no models preset named 'gpt5'",
        ),
        (
            ["workload.dataset=nope", "workload.prompt_tokens=null", "workload.output_tokens=null"],
            "config field 'workload.dataset': no length table 'nope'",
        ),
    ],
)
def test_build_errors_name_the_field(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        simulate(scenario_from_dict(tiny_scenario(), overrides))
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (  # a field's error: its message, at the field that named the profile
            ["policies.batching={name: wisp, params: {profile: rtx4500-llama2-7b-zhu}}"],
            "config field 'policies.batching.params.profile': "
            "'rtx4500-llama2-7b-zhu' is not a 'wisp' profile",
        ),
        (  # a file's error keeps its file whole, even one whose name holds "': "
            ['policies.batching={name: wisp, params: {profile: "no\': such.yaml"}}'],
            "config field 'policies.batching.params.profile': no': such.yaml: file not found",
        ),
        (
            ['auto_topology.servers.0.cost_model={kind: wisp, profile: "no\': such.yaml"}'],
            "config field 'auto_topology.servers[0].cost_model.profile': "
            "no': such.yaml: file not found",
        ),
        (
            [
                "auto_topology.devices.0.cost_model={kind: wisp, profile: edge-50tps}",
                "auto_topology.devices.0.draft_model=gpt5",
            ],
            "config field 'auto_topology.devices[0].draft_model': no models preset named 'gpt5'; "
            "known: [",
        ),
    ],
)
def test_profile_and_preset_errors_are_reported_at_the_field_that_named_them(
    overrides: list[str], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        simulate(scenario_from_dict(tiny_scenario(duration_s=0.5), overrides))
    assert str(info.value).startswith(message)
    assert str(info.value).count("config field") == 1


def test_trace_acceptance_defaults_to_the_bundled_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "bundled_traces", lambda: [])
    with pytest.raises(ConfigError) as info:
        simulate(scenario_from_dict(tiny_scenario(), ["acceptance.kind=trace"]))
    assert "config field 'acceptance.traces': trace acceptance needs acceptance_seq" in str(
        info.value
    )
    bundled = Path(__file__).parent.parent / "acceptance_trace.jsonl"
    monkeypatch.setattr(sources, "bundled_traces", lambda: [bundled])
    result = simulate(scenario_from_dict(tiny_scenario(), ["acceptance.kind=trace"]))
    explicit = simulate(
        scenario_from_dict(tiny_scenario(), [f"acceptance={{kind: trace, traces: [{bundled}]}}"])
    )
    assert result.requests == explicit.requests and len(result.requests) > 20


def test_a_scenario_takes_a_duration_with_an_exponent() -> None:
    scenario = load_scenario(None, ["duration_s=1.2e2", "links.default.rtt_ms=2e1"])
    assert scenario.duration_s == 120.0
    assert scenario.links["default"].rtt_ms == 20.0
