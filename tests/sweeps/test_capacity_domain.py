"""What a capacity search probes and what it refuses before any run: a cell-pinned pool's
count only in multiples of ``auto_topology.cells`` (bounds that are not, refused saying the
step), and one class's capacity where the scenario gives that class no target or no
requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.metrics import SystemMetrics
from edgespec.sim.commands.checks import check_class_measured
from edgespec.sim.setup.cells import count_step
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sweeps.capacity import ProbeStep, capacity_search
from tests.sim.helpers import tiny_scenario
from tests.sweeps.test_capacity import metrics_with_violations

KEY = "auto_topology.devices.0.count"
CELLS = {"auto_topology": {"cells": 2, "devices": [{"count": 2}], "servers": [{"count": 2}]}}
STEP = ProbeStep(2, "auto_topology.cells")


class CountRunner:
    """Violation rate (n - 300) / 100 clipped to [0, 1], n = the first device pool's count;
    refuses an odd count as the scenario does (the pools split into 2 cells)."""

    def __init__(self) -> None:
        self.counts: list[int] = []

    def __call__(self, scenario: dict[str, Any]) -> SystemMetrics:
        n = scenario["auto_topology"]["devices"][0]["count"]
        self.counts.append(n)
        if n % 2:
            raise ConfigError(KEY, f"must be a multiple of auto_topology.cells (2), got {n}")
        return metrics_with_violations(min(100, max(0, n - 300)))


def test_a_cell_pinned_count_is_probed_in_multiples_of_the_cells() -> None:
    runner = CountRunner()
    result = capacity_search(
        CELLS, KEY, runner, epsilon=0.05, lo=2, hi=1000, progress=False, step=STEP
    )
    assert runner.counts == [2, 1000, 500, 250, 374, 312, 280, 296, 304, 308, 306]
    assert (result.capacity, result.at_upper_bound) == (304, False)
    assert [p.value for p in result.probes] == runner.counts


@pytest.mark.parametrize(
    ("lo", "hi", "message"),
    [
        (3, 1000, "lo=3 is not a multiple of auto_topology.cells (2): the search probes only "
         "the values the scenario takes, in steps of 2: give lo=4"),
        (2, 999, "hi=999 is not a multiple of auto_topology.cells (2): the search probes only "
         "the values the scenario takes, in steps of 2: give hi=998"),
    ],
)  # fmt: skip
def test_bounds_off_the_cell_step_are_refused_before_any_run(
    lo: int, hi: int, message: str
) -> None:
    runner = CountRunner()
    with pytest.raises(ConfigError) as error:
        capacity_search(CELLS, KEY, runner, epsilon=0.05, lo=lo, hi=hi, progress=False, step=STEP)
    assert str(error.value) == f"config field 'auto_topology.devices[0].count': {message}"
    assert runner.counts == []


def test_the_step_is_the_cell_count_for_a_pools_count_only() -> None:
    assert count_step(CELLS, KEY) == 2
    assert count_step(CELLS, "auto_topology.servers.1.count") == 2
    assert count_step(CELLS, "seed") == 1
    assert count_step(CELLS, "auto_topology.devices.x.count") == 1
    assert count_step({"auto_topology": {"cells": 1}}, KEY) == 1
    assert count_step({}, KEY) == 1


@pytest.mark.parametrize(
    ("scenario", "overrides", "lo", "hi", "cells"),
    [
        ("bench-cells", ["auto_topology.servers.0.count=2"], 2, 1000, 2),
        ("bench-cells-100k", ["auto_topology.servers.0.count=10"], 10, 10_000, 10),
    ],
)
def test_the_bundled_cells_scenarios_search_their_device_count(
    scenario: str, overrides: list[str], lo: int, hi: int, cells: int, tmp_path: Path
) -> None:
    """Both bisect past their bounds (hi violates), every probe a multiple of the cells."""
    args = ["sim", scenario, "duration_s=2", *overrides, "--capacity", KEY]
    out = tmp_path / "cap"
    assert main([*args, "--lo", str(lo), "--hi", str(hi), "--quiet", "--out", str(out)]) == 0
    result = json.loads((out / "capacity.json").read_text())
    probed = [p["value"] for p in result["probes"]]
    assert probed[:2] == [lo, hi] and len(probed) > 2 and not result["at_upper_bound"]
    assert [value % cells for value in probed] == [0] * len(probed)
    assert result["capacity"] % cells == 0 and lo <= result["capacity"] < hi


def _never_run(scenario: dict[str, Any]) -> SystemMetrics:
    raise AssertionError(f"a probe ran: {scenario['auto_topology']}")


FREE = tiny_scenario(slo_classes={"gold": 6.0, "free": None})
FREE["auto_topology"]["devices"][0]["slo_mix"] = {"gold": 0.5, "free": 0.5}
NO_TARGET = (
    "class free has no token-speed target, so its capacity has no violation rate to bound; "
    "give it one (slo_classes.free=<tok/s>) or search a class that has one: ['gold']"
)


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({}, "slo_classes.free", NO_TARGET),
        (
            {"slo_classes": {"gold": 6.0, "free": 3.0}, "mix": {"gold": 1.0, "free": 0}},
            "auto_topology.devices",
            "no device pool's slo_mix gives class free a share, so none of its requests is of "
            "class free; add it to a pool's slo_mix or search one of the pools' classes: "
            "['gold']",
        ),
    ],
)
def test_a_class_the_runs_cannot_measure_is_refused(
    overrides: dict[str, Any], field: str, message: str
) -> None:
    data = json.loads(json.dumps(FREE))
    if "slo_classes" in overrides:
        data["slo_classes"] = overrides["slo_classes"]
    if "mix" in overrides:
        data["auto_topology"]["devices"][0]["slo_mix"] = overrides["mix"]
    with pytest.raises(ConfigError) as error:
        check_class_measured(scenario_from_dict(data), "free")
    assert str(error.value) == f"config field '{field}': {message}"


def test_a_measurable_class_or_a_trace_workload_is_not_refused() -> None:
    measured = json.loads(json.dumps(FREE))
    measured["slo_classes"]["free"] = 3.0
    check_class_measured(scenario_from_dict(measured), "free")
    check_class_measured(scenario_from_dict(FREE), "gold")
    traced = json.loads(json.dumps(measured))
    traced["auto_topology"]["devices"][0]["slo_mix"] = {"gold": 1.0}
    with pytest.raises(ConfigError):
        check_class_measured(scenario_from_dict(traced), "free")


@pytest.mark.parametrize("lo", ["1", "20"])
def test_sim_capacity_of_a_class_without_target_exits_2_before_any_run(
    lo: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--lo 1`` reported ``None (even ... violates more than epsilon)`` after a run, and
    ``--lo 20`` stopped after one with ``none of its 4 requests has a target``."""
    from edgespec.sim.commands import run

    monkeypatch.setattr(run, "run_scenario_dict", _never_run)
    path = tmp_path / "free.yaml"
    path.write_text(yaml.safe_dump(FREE, sort_keys=False))
    out = tmp_path / "cap"
    args = ["sim", str(path), "--capacity", KEY, "--slo-class", "free", "--lo", lo, "--hi", "40"]
    assert main([*args, "--quiet", "--out", str(out)]) == 2
    at = path.read_text().splitlines().index("  free: null") + 1  # the class's own line
    line = f"{path}:{at}: config field 'slo_classes.free': {NO_TARGET}\n"
    assert capsys.readouterr().err == f"edgespec sim: {line}"
    assert not (out / "capacity.json").exists()
