"""Scenario fields that validation refuses before anything is built: a temperature that
is not a finite number, a fleet over its limit (and a capacity search whose bound is), and
a field set where its kind does not use it (``applies only to ...``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError, from_dict, read_yaml
from edgespec.config.scenario_files import bundled_scenarios, bundled_scenarios_dir
from edgespec.metrics.types import SystemMetrics
from edgespec.sim.drafting_server.scenario import PipelineScenario
from edgespec.sim.setup.pools import MAX_DEVICES, MAX_SERVERS
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.setup.system import system_of
from edgespec.sweeps.capacity import capacity_search, field_path
from tests.sim.helpers import tiny_scenario


def _refused(overrides: list[str], data: dict[str, Any] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(tiny_scenario() if data is None else data, overrides)
    return str(info.value)


@pytest.mark.parametrize(("value", "shown"), [(".nan", "nan"), (".inf", "inf"), ("-1", "-1.0")])
def test_temperature_must_be_a_finite_number(value: str, shown: str) -> None:
    assert _refused([f"temperature={value}"]) == (
        f"config field 'temperature': must be a finite number >= 0, got {shown}"
    )


def test_the_fleet_limits_allow_the_documented_fleet_and_ten_times_it() -> None:
    assert (MAX_DEVICES, MAX_SERVERS) == (1_000_000, 100_000)
    scenario = scenario_from_dict(
        tiny_scenario(),
        [
            f"auto_topology.devices.0.count={MAX_DEVICES}",
            f"auto_topology.servers.0.count={MAX_SERVERS}",
        ],
    )
    assert scenario.auto_topology.devices[0].count == MAX_DEVICES


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["auto_topology.devices.0.count=1000000000"],
            "'auto_topology.devices[0].count': must be <= 1000000 (a scenario has at most "
            "1,000,000 devices in all pools), got 1000000000",
        ),
        (  # several pools: their total, at the pools (tests/sim/setup/test_fleet_limit.py)
            [
                "auto_topology.devices=[{link: wan, count: 600000, slo_mix: {slow: 1}}, "
                "{link: wan, count: 400001, slo_mix: {slow: 1}}]"
            ],
            "'auto_topology.devices': 1,000,001 devices in all pools (600,000 + 400,001), "
            "over the limit of 1,000,000 devices in a scenario",
        ),
        (
            ["auto_topology.servers.0.count=100001"],
            "'auto_topology.servers[0].count': must be <= 100000 (a scenario has at most "
            "100,000 servers in all pools), got 100001",
        ),
        (  # checked before the cells are written out (10^12 pools otherwise)
            [
                "auto_topology.cells=1000000000000",
                "auto_topology.devices.0.count=1000000000000",
                "auto_topology.servers.0.count=1000000000000",
            ],
            "'auto_topology.devices[0].count': must be <= 1000000 (a scenario has at most "
            "1,000,000 devices in all pools), got 1000000000000",
        ),
    ],
)
def test_a_fleet_over_its_limit_is_refused_at_the_pool_count(
    overrides: list[str], message: str
) -> None:
    assert _refused(overrides) == f"config field {message}"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["workload.rate_per_s=-5"],
            "'workload.rate_per_s': applies only to kind: poisson (kind is closed_loop)",
        ),
        (
            ["workload.trace=nosuch.jsonl"],
            "'workload.trace': applies only to kind: trace (kind is closed_loop)",
        ),
        (
            ["workload.kind=poisson"],
            "'workload.think_time_s': applies only to kind: closed_loop (kind is poisson)",
        ),
        (
            ["workload={kind: trace, trace: t.jsonl, max_output_tokens: 9}"],
            "'workload.max_output_tokens': applies only to kind: closed_loop or poisson "
            "(kind is trace)",
        ),
        (
            ["workload.think_cv=99"],
            "'workload.think_cv': applies only to think_distribution: lognormal "
            "(think_distribution is exponential)",
        ),
        (
            ["workload.arrivals_until_s=100"],
            "'workload.arrivals_until_s': must be <= duration_s (20.0), got 100.0",
        ),
        (
            ["acceptance.traces=[nosuch]"],
            "'acceptance.traces': applies only to kind: trace (kind is iid)",
        ),
        (
            ["acceptance={kind: decay, alpha: 0.5}"],
            "'acceptance.alpha': applies only to kind: iid (kind is decay)",
        ),
        (
            ["acceptance.rates=[0.5]"],
            "'acceptance.rates': applies only to kind: decay (kind is iid)",
        ),
        (
            ["auto_topology.servers.0.cost_model={kind: roofline, profile: nosuch}"],
            "'auto_topology.servers[0].cost_model.profile': applies only to kind: wisp, zhu "
            "or lookup (kind is roofline)",
        ),
        (
            ["auto_topology.devices.0.cost_model.profile=nosuch"],
            "'auto_topology.devices[0].cost_model.profile': applies only to kind: wisp, zhu "
            "or lookup (kind is roofline)",
        ),
    ],
)
def test_a_field_its_kind_does_not_use_is_refused(overrides: list[str], message: str) -> None:
    assert _refused(overrides) == f"config field {message}"


def test_a_field_at_its_default_or_of_its_own_kind_is_accepted() -> None:
    scenario = scenario_from_dict(
        tiny_scenario(),
        [
            "acceptance={kind: decay, alpha: 0.7}",  # alpha's default
            "workload.think_distribution=lognormal",
            "workload.think_cv=1.5",
            "workload.arrivals_until_s=20",
        ],
    )
    assert scenario.workload.think_cv == 1.5 and scenario.workload.arrivals_until_s == 20.0
    poisson = scenario_from_dict(
        tiny_scenario(),
        ["workload.kind=poisson", "workload.think_time_s=0", "workload.rate_per_s=3"],
    )
    assert poisson.workload.rate_per_s == 3.0


def test_pipeline_traces_apply_only_to_trace_acceptance() -> None:
    data = read_yaml(bundled_scenarios_dir() / "zhu-pipeline.yaml")
    data["pipeline"]["simulation"]["traces"] = ["nosuch"]
    with pytest.raises(ConfigError) as info:
        from_dict(PipelineScenario, data)
    assert str(info.value) == (
        "config field 'pipeline.simulation.traces': applies only to acceptance: trace "
        "(acceptance is expected)"
    )
    data["pipeline"]["simulation"]["acceptance"] = "trace"
    assert from_dict(PipelineScenario, data).pipeline.simulation.traces == ("nosuch",)


def test_every_bundled_scenario_sets_only_fields_its_kinds_use() -> None:
    for name in bundled_scenarios():
        data = read_yaml(bundled_scenarios_dir() / f"{name}.yaml")
        if system_of(data) == "drafting_server":
            from_dict(PipelineScenario, data)
        else:
            scenario_from_dict(data)


def test_field_path_writes_list_indices_as_config_errors_do() -> None:
    assert field_path("auto_topology.devices.0.count") == "auto_topology.devices[0].count"
    assert field_path("devices.count") == "devices.count"
    assert field_path("slo_classes.3") == "slo_classes[3]"


def test_a_capacity_bound_over_the_fleet_limit_is_refused_before_any_run() -> None:
    def never(scenario: dict[str, Any]) -> SystemMetrics:
        raise AssertionError("no probe may run")

    with pytest.raises(ConfigError) as info:
        capacity_search(
            tiny_scenario(),
            "auto_topology.devices.0.count",
            never,
            epsilon=0.05,
            lo=1,
            hi=10**12,
            progress=False,
            check=scenario_from_dict,
        )
    assert str(info.value) == (
        "config field 'auto_topology.devices[0].count': at hi=1000000000000: must be <= "
        "1000000 (a scenario has at most 1,000,000 devices in all pools), got 1000000000000"
    )


def test_sim_capacity_with_hi_over_the_limit_exits_2_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cap.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario()))
    args = ["sim", str(path), "--capacity", "auto_topology.devices.0.count", "--lo", "1"]
    assert main([*args, "--hi", str(10**12), "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: config field 'auto_topology.devices[0].count': at hi=1000000000000: "
        "must be <= 1000000 (a scenario has at most 1,000,000 devices in all pools), got "
        "1000000000000\n"
    )
