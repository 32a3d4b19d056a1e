"""Switching a policy by name (``policies.window.name=awc``) starts from that policy's own
defaults (edgespec.config.apply_overrides), and a parameter a policy does not take is a
ConfigError at the spec's ``params`` listing those it takes, in the simulator and in the
server and drafter configs."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.config import ConfigError, PolicySpec, apply_overrides, load_config, read_yaml
from edgespec.config.scenario_files import default_scenario_path
from edgespec.policies.registry import ROUTING, UnknownParamsError, accepted_params, build_policy
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.server.batching import build_batching
from edgespec.runtime.server.config import ServerConfig
from edgespec.sim.setup.build import build_policies
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario

SHORT = [
    "duration_s=3",
    "auto_topology.devices.0.count=3",
    "auto_topology.devices.1.count=2",
    "auto_topology.servers.0.count=1",
]
"""The bundled default scenario cut down to a few devices and seconds."""


def test_the_default_scenario_switched_to_awc_builds_and_runs() -> None:
    data = read_yaml(default_scenario_path())
    assert data["policies"]["window"] == {"name": "static", "params": {"gamma": 4}}
    scenario = scenario_from_dict(data, ["policies.window.name=awc", *SHORT])
    assert scenario.policies.window == PolicySpec("awc")
    assert type(build_policies(scenario).window).__name__ == "AwcWindow"
    result = simulate(scenario)
    assert result.num_rounds > 0 and result.requests


@pytest.mark.parametrize(
    ("spec", "old", "new"),
    [
        ("policies.routing", {"name": "random", "params": {"seed": 3}}, "jsq"),
        ("policies.batching", {"name": "lab", "params": {"max_length_ratio": 2.0}}, "fcfs"),
        ("policies.window", {"name": "static", "params": {"gamma": 4}}, "awc"),
        ("stop_predictor.policy", {"name": "mlp", "params": {"threshold": 0.5}}, "other"),
    ],
)
def test_switching_a_policy_drops_the_old_params(spec: str, old: dict[str, Any], new: str) -> None:
    head, key = spec.split(".")
    data = {head: {key: old}}
    switched = apply_overrides(data, [f"{spec}.name={new}"])
    assert switched[head][key] == {"name": new}
    assert data[head][key] == old  # the input is untouched
    same = apply_overrides(data, [f"{spec}.name={old['name']}"])
    assert same[head][key] == old  # the same policy keeps its params
    given = {"a": 1}
    for overrides in (
        [f"{spec}.name={new}", f"{spec}.params.a=1"],
        [f"{spec}.params.a=1", f"{spec}.name={new}"],  # before its name, too
        [f"{spec}.params={{a: 1}}", f"{spec}.name={new}"],
    ):
        assert apply_overrides(data, overrides)[head][key] == {"name": new, "params": given}


def test_a_name_without_params_next_to_it_is_left_alone() -> None:
    data = {"auto_topology": {"devices": [{"name": "phones", "count": 2}]}, "name": "x"}
    out = apply_overrides(data, ["auto_topology.devices.0.name=tablets", "name=y"])
    assert out == {"auto_topology": {"devices": [{"name": "tablets", "count": 2}]}, "name": "y"}
    assert apply_overrides({}, ["policies.window.name=awc"]) == {
        "policies": {"window": {"name": "awc"}}
    }


def test_the_server_and_drafter_configs_switch_the_same_way(tmp_path: Any) -> None:
    path = tmp_path / "drafter.yaml"
    path.write_text("window: {name: static, params: {gamma: 6}}\nrouting: {name: jsq}\n")
    assert load_config(DrafterConfig, path, ["window.name=awc"]).window == PolicySpec("awc")
    server = tmp_path / "server.yaml"
    server.write_text("batching: {name: wisp, params: {profile: a100-qwen3-32b}}\n")
    config = load_config(ServerConfig, server, ["batching.name=lab"])
    assert config.batching == PolicySpec("lab")
    assert type(build_batching(config.batching)).__name__ == "LengthAwareBatching"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["policies.window={name: awc, params: {gamma: 4}}"],
            "config field 'policies.window.params': window policy 'awc' has no parameter(s) "
            "['gamma']; known: ['file', 'fused_gamma', 'initial_gamma', 'queue_capacity'] "
            "(did you mean 'fused_gamma'?)",
        ),
        (
            ["policies.window={name: static, params: {gama: 4}}"],
            "config field 'policies.window.params': window policy 'static' has no parameter(s) "
            "['gama']; known: ['fused', 'gamma'] (did you mean 'gamma'?)",
        ),
        (
            ["policies.routing={name: jsq, params: {seed: 1}}"],
            "config field 'policies.routing.params': routing policy 'jsq' has no parameter(s) "
            "['seed']; known: []",
        ),
        (
            ["policies.batching={name: fcfs, params: {guard_s: 1}}"],
            "config field 'policies.batching.params': batching policy 'fcfs' has no "
            "parameter(s) ['guard_s']; known: []",
        ),
        (
            ["policies.batching={name: wisp, params: {profile: a100-qwen3-32b, delta: 1}}"],
            "config field 'policies.batching.params': batching policy 'wisp' has no "
            "parameter(s) ['delta']; known: ['a_s', 'b_compute_s', 'b_read_s', 'c_s', "
            "'guard_s', 'profile', 'work_conserving']",
        ),
        (
            ["stop_predictor={policy: {name: mlp, params: {cutoff: 0.5}}}"],
            "config field 'stop_predictor.policy.params': stop policy 'mlp' has no "
            "parameter(s) ['cutoff']; known: ['file', 'threshold']",
        ),
    ],
)
def test_an_unknown_param_is_named_with_the_params_the_policy_takes(
    overrides: list[str], message: str
) -> None:
    with pytest.raises(ConfigError) as error:
        build_policies(scenario_from_dict(tiny_scenario(), overrides))
    assert str(error.value) == message
    assert not isinstance(error.value.__cause__, TypeError)


def test_the_server_names_an_unknown_batching_param_at_its_params() -> None:
    with pytest.raises(ConfigError) as error:
        build_batching(PolicySpec("lab", {"ratio": 2}))
    assert str(error.value) == (
        "config field 'batching.params': batching policy 'lab' has no parameter(s) "
        "['ratio']; known: ['max_length_ratio']"
    )


def test_a_factory_taking_any_keyword_is_left_to_check_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(ROUTING, "open", lambda **params: sorted(params))
    assert accepted_params("routing", "open") is None
    assert build_policy("routing", "open", {"b": 1, "a": 2}) == ["a", "b"]
    monkeypatch.setitem(ROUTING, "closed", lambda *, a=1: a)
    assert accepted_params("routing", "closed") == ("a",)
    with pytest.raises(UnknownParamsError, match=r"no parameter\(s\) \['b'\]; known: \['a'\]"):
        build_policy("routing", "closed", {"b": 1})
