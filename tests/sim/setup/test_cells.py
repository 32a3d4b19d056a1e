"""``auto_topology.cells: N`` (sim/cells.py ``replicate_cells``): N pinned cells written in
one line are the scenario written out by hand, and the field's errors name it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from edgespec.config import ConfigError
from edgespec.sim.model.layout import Layout
from edgespec.sim.setup.cells import plan_cells, select_cells
from edgespec.sim.setup.scenario import load_scenario, scenario_from_dict
from edgespec.sim.setup.topology import expand_topology
from edgespec.sim.simulator import run_scenario
from tests.sim.helpers import tiny_scenario
from tests.sim.parts import build_fleet

SCENARIOS = "edgespec/data/scenarios"


def two_pools(**changes: Any) -> dict[str, Any]:
    """Two device pools (6 and 4 devices) and two server pools (2 and 4 servers)."""
    data = tiny_scenario(**changes)
    phones = data["auto_topology"]["devices"][0]
    server = data["auto_topology"]["servers"][0]
    data["auto_topology"]["devices"] = [
        {**phones, "name": "a", "count": 6},
        {**phones, "name": "b", "count": 4},
    ]
    data["auto_topology"]["servers"] = [
        {**server, "name": "s", "count": 2},
        {**server, "name": "t", "count": 4},
    ]
    data["duration_s"] = 20.0
    return data


def test_cells_write_out_pinned_pools_in_cell_order() -> None:
    by_field = scenario_from_dict(two_pools(), ["auto_topology.cells=2"])
    data = two_pools()
    phones = data["auto_topology"]["devices"]
    servers = data["auto_topology"]["servers"]
    data["auto_topology"]["devices"] = [
        {**phones[0], "name": "a-0", "count": 3, "server_pools": [0, 1]},
        {**phones[1], "name": "b-0", "count": 2, "server_pools": [0, 1]},
        {**phones[0], "name": "a-1", "count": 3, "server_pools": [2, 3]},
        {**phones[1], "name": "b-1", "count": 2, "server_pools": [2, 3]},
    ]
    data["auto_topology"]["servers"] = [
        {**servers[0], "name": "s-0", "count": 1},
        {**servers[1], "name": "t-0", "count": 2},
        {**servers[0], "name": "s-1", "count": 1},
        {**servers[1], "name": "t-1", "count": 2},
    ]
    by_hand = scenario_from_dict(data)
    assert by_field == by_hand
    plans = plan_cells(by_field)
    assert [(p.device_pools, p.server_pools, p.num_devices, p.num_servers) for p in plans] == [
        ((0, 1), (0, 1), 5, 3),
        ((2, 3), (2, 3), 5, 3),
    ]
    assert run_scenario(by_field) == run_scenario(by_hand)


def test_one_cell_leaves_the_pools_as_written() -> None:
    assert scenario_from_dict(two_pools(), ["auto_topology.cells=1"]) == scenario_from_dict(
        two_pools()
    )


def test_the_bundled_cell_scenarios_are_the_bench_in_cells() -> None:
    """bench-cells-100k.yaml is bench.yaml at 100,000 devices, cut by ``cells: 10``."""
    by_field = load_scenario(
        f"{SCENARIOS}/bench.yaml",
        [
            "duration_s=60",
            "auto_topology.devices.0.count=100000",
            "auto_topology.servers.0.count=2000",
            "auto_topology.cells=10",
        ],
    )
    cells = load_scenario(f"{SCENARIOS}/bench-cells-100k.yaml")
    assert dataclasses.replace(cells, name="bench") == by_field
    assert [p.name for p in cells.auto_topology.devices] == [f"orin-{k}" for k in range(10)]
    assert cells.auto_topology.devices[9].server_pools == (9,)
    assert [p.count for p in cells.auto_topology.servers] == [200] * 10


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        (["auto_topology.cells=0"], "auto_topology.cells", "must be an integer >= 1, got 0"),
        (["auto_topology.cells=two"], "auto_topology.cells", "must be an integer >= 1, got 'two'"),
        (
            ["auto_topology.cells=4"],
            "auto_topology.devices[0].count",
            "must be a multiple of auto_topology.cells (4), got 6",
        ),
        (
            ["auto_topology.cells=2", "auto_topology.servers.0.count=3"],
            "auto_topology.servers[0].count",
            "must be a multiple of auto_topology.cells (2), got 3",
        ),
        (
            ["auto_topology.cells=2", "auto_topology.devices.1.server_pools=[1]"],
            "auto_topology.devices[1].server_pools",
            "auto_topology.cells pins the pools; leave it out",
        ),
        (["auto_topology.cells=true"], "auto_topology.cells", "must be an integer >= 1, got true"),
        (
            ["auto_topology.cells=2", "auto_topology.devices.0.count=0"],
            "auto_topology.devices[0].count",
            "must be a multiple of auto_topology.cells (2), got 0",
        ),
        (
            ["auto_topology.cells=2", "auto_topology.devices=[3]"],
            "auto_topology.devices[0]",
            "expected a mapping, got 3",
        ),
    ],
)
def test_cells_errors_name_the_field(overrides: list[str], field: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(two_pools(), overrides)
    assert str(info.value) == f"config field '{field}': {message}"


def test_cells_without_servers_cut_the_default_server_pool() -> None:
    data = two_pools()
    del data["auto_topology"]["servers"]  # one default pool of 1 server: not cut in 2
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(data, ["auto_topology.cells=2"])
    assert str(info.value) == (
        "config field 'auto_topology.servers[0].count': "
        "must be a multiple of auto_topology.cells (2), got 1"
    )


def test_cells_are_numbered_by_their_first_server_pool() -> None:
    data = two_pools()
    data["auto_topology"]["devices"][0]["server_pools"] = [1]
    data["auto_topology"]["devices"][1]["server_pools"] = [0]
    plans = plan_cells(scenario_from_dict(data))
    assert [(p.index, p.device_pools, p.server_pools) for p in plans] == [
        (0, (1,), (0,)),
        (1, (0,), (1,)),
    ]
    data["auto_topology"]["devices"][0]["server_pools"] = [-1]
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(data)
    assert str(info.value) == (
        "config field 'auto_topology.devices[0].server_pools': no server pool -1 (there are 2)"
    )


def test_selected_cells_are_sorted_and_checked() -> None:
    scenario = scenario_from_dict(two_pools(), ["auto_topology.cells=2"])
    devices, servers = expand_topology(scenario)
    _, _, layout = select_cells(scenario, devices, servers, [1, 0, 1])
    assert layout.cell_ids == (0, 1) and not layout.is_shard
    kept, _, layout = select_cells(scenario, devices, servers, [1])
    assert tuple(d.device_id for d in kept) == layout.device_global == (5, 6, 7, 8, 9)
    assert layout.is_shard
    with pytest.raises(ValueError, match=r"^no cell -1: the scenario has 2 \(0 to 1\)$"):
        select_cells(scenario, devices, servers, [-1])


def test_a_layout_is_a_shard_when_either_ids_differ() -> None:
    assert not Layout.whole(2, 1).is_shard
    assert Layout((0,), (0, 0), (0,), (0, 1), (1,)).is_shard  # servers only
    assert Layout((0,), (0, 0), (0,), (2, 3), (0,)).is_shard  # devices only


def test_asking_for_cells_that_do_not_exist_is_a_value_error() -> None:
    pinned = load_scenario(f"{SCENARIOS}/bench-cells.yaml")
    with pytest.raises(ValueError, match=r"^no cell 2: the scenario has 2 \(0 to 1\)$") as info:
        build_fleet(pinned, [0, 2])
    assert type(info.value) is ValueError  # not a ConfigError: no config field is wrong
    unpinned = scenario_from_dict(tiny_scenario(), [])
    with pytest.raises(ValueError, match=r"^cells \[0\] asked of a scenario without pinned"):
        build_fleet(unpinned, [0])
