"""Cells and shards (sim/cells.py, sim/shards.py): a scenario whose device pools are pinned
to disjoint server pools runs as independent shards whose records and merged metrics are
exactly those of the single-process run with the same seed."""

from __future__ import annotations

import copy
import json
from dataclasses import astuple
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.errors import UserInputError
from edgespec.metrics.record_files import RecordFiles, concatenate_records
from edgespec.sim.model.rng import spawn_streams
from edgespec.sim.setup.cells import plan_cells, split_cells
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.shards import simulate_sharded
from edgespec.sim.simulator import run_scenario, simulate
from edgespec.sweeps.executor import ProcessPoolSweepExecutor, SerialExecutor
from tests.sim.helpers import tiny_scenario
from tests.sweeps.executors import ReversedExecutor


def ordered(records: Any) -> list[tuple[Any, ...]]:
    """Records as tuples, sorted (their first fields tell them apart)."""
    return sorted(astuple(r) for r in records)


def pinned(**changes: Any) -> dict[str, Any]:
    """Three cells: pools 0 and 1 share server pool 0; pool 2 has server pools 1 and 2;
    pool 3 has server pool 3 (a single server)."""
    data = tiny_scenario(**changes)
    phones = data["auto_topology"]["devices"][0]
    server = data["auto_topology"]["servers"][0]
    data["auto_topology"]["devices"] = [
        {**phones, "name": "a", "count": 7, "server_pools": [0]},
        {**phones, "name": "b", "count": 4, "server_pools": [0]},
        {**phones, "name": "c", "count": 9, "server_pools": [2, 1]},
        {**phones, "name": "d", "count": 5, "server_pools": [3]},
    ]
    data["auto_topology"]["servers"] = [
        {**server, "count": 2},
        {**server, "count": 1},
        {**server, "count": 2},
        {**server, "count": 1},
    ]
    data["duration_s"] = 20.0
    return data


def test_device_streams_do_not_depend_on_the_fleet() -> None:
    whole = np.random.SeedSequence([3, *b"device"]).spawn(10)
    picked = spawn_streams(3, "device", [9, 4])
    expected = [np.random.Generator(np.random.PCG64(whole[i])).random(40).tolist() for i in (9, 4)]
    assert [[s.next() for _ in range(40)] for s in picked] == expected


def test_cells_are_planned_from_the_pins() -> None:
    plans = plan_cells(scenario_from_dict(pinned()))
    assert [(p.index, p.device_pools, p.server_pools) for p in plans] == [
        (0, (0, 1), (0,)),
        (1, (2,), (1, 2)),
        (2, (3,), (3,)),
    ]
    assert [(p.num_devices, p.num_servers) for p in plans] == [(11, 2), (9, 3), (5, 1)]
    assert split_cells(plans, 2) == [(0,), (1, 2)]
    assert split_cells(plans, 5) == [(0,), (1,), (2,)]
    assert plan_cells(scenario_from_dict(tiny_scenario())) == ()


@pytest.mark.parametrize("num_shards", [0, -1])
def test_split_cells_refuses_fewer_than_one_shard(num_shards: int) -> None:
    plans = plan_cells(scenario_from_dict(pinned()))
    with pytest.raises(ValueError) as raised:
        split_cells(plans, num_shards)
    assert type(raised.value) is ValueError  # a library error, not a ConfigError
    assert str(raised.value) == f"shards must be >= 1, got {num_shards}"


@pytest.mark.parametrize(
    "overrides",
    [[], ["fast_path=false"], ["policies.routing.name=round_robin"], ["record_rounds=true"]],
)
def test_each_shard_reproduces_its_cells_of_the_single_run(overrides: list[str]) -> None:
    scenario = scenario_from_dict(pinned(), overrides)
    whole = simulate(scenario)
    assert len(whole.requests) > 50
    parts = [simulate(scenario, cells=[c]) for c in range(3)]
    assert ordered(r for p in parts for r in p.requests) == ordered(whole.requests)
    assert ordered(b for p in parts for b in p.batches) == ordered(whole.batches)
    assert ordered(r for p in parts for r in p.rounds) == ordered(whole.rounds)
    if overrides == ["record_rounds=true"]:
        assert len(whole.rounds) > 500
    assert sum(p.num_rounds for p in parts) == whole.num_rounds
    # the cells are really separate: every request of a cell ran on that cell's servers
    cell_servers = [{0, 1}, {2, 3, 4}, {5}]
    for cell, part in enumerate(parts):
        assert {r.server_id for r in part.requests} <= cell_servers[cell]
        assert all(r.request_id.startswith(f"c{cell}-r") for r in part.requests)


def test_sharded_metrics_equal_the_single_process_run() -> None:
    data = pinned()
    expected = run_scenario(scenario_from_dict(data))
    calls: list[tuple[int, int]] = []
    serial = simulate_sharded(data, 2, SerialExecutor(), progress=lambda *c: calls.append(c))
    assert [s.cells for s in serial.shards] == [(0,), (1, 2)]
    assert calls == [(0, 2), (1, 2), (2, 2)]  # before the first shard, then as each ends
    assert serial.metrics == expected
    assert serial.num_rounds == simulate(scenario_from_dict(data), keep_records=False).num_rounds
    pooled = simulate_sharded(copy.deepcopy(data), 3, ProcessPoolSweepExecutor(2))
    assert pooled.metrics == expected


def test_pins_must_follow_the_cell_rules() -> None:
    data = pinned()
    del data["auto_topology"]["devices"][1]["server_pools"]
    with pytest.raises(ConfigError, match=r"devices\[1\].server_pools.*pin every device pool"):
        scenario_from_dict(data)
    data = pinned()
    data["auto_topology"]["devices"][3]["server_pools"] = [3, 2]
    with pytest.raises(ConfigError, match=r"shares server pools \[2\].*equal or disjoint"):
        scenario_from_dict(data)
    data = pinned()
    data["auto_topology"]["devices"][3]["server_pools"] = [2, 1]
    with pytest.raises(ConfigError, match=r"servers\[3\].*no device pool is pinned"):
        scenario_from_dict(data)
    data = pinned()
    data["auto_topology"]["devices"][0]["server_pools"] = [4]
    with pytest.raises(ConfigError, match=r"no server pool 4 \(there are 4\)"):
        scenario_from_dict(data)
    with pytest.raises(ConfigError, match="pinned device pools need a closed_loop workload"):
        scenario_from_dict(pinned(), ["workload.kind=poisson", "workload.think_time_s=0"])
    with pytest.raises(UserInputError, match="^--shards: only a scenario whose device pools"):
        simulate_sharded(tiny_scenario(), 2, SerialExecutor())


def sorted_rows(path: Path) -> list[tuple[Any, ...]]:
    """A Parquet file's rows as sorted tuples."""
    return sorted(tuple(row.values()) for row in pq.read_table(path).to_pylist())


def test_sim_command_runs_shards_and_writes_the_single_run_folder(tmp_path: Path) -> None:
    path = tmp_path / "pinned.yaml"
    path.write_text(yaml.safe_dump(pinned()))
    single, sharded = tmp_path / "single", tmp_path / "sharded"
    common = ["--quiet", "--no-plots", "--rounds"]
    assert main(["sim", str(path), "--out", str(single), *common]) == 0
    args = ["sim", str(path), "--shards", "2", "--workers", "2", "--out", str(sharded)]
    assert main([*args, "--no-plots", "--rounds"]) == 0  # with the progress bar
    metrics = json.loads((sharded / "metrics.json").read_text())
    assert metrics == json.loads((single / "metrics.json").read_text())
    shards = json.loads((sharded / "shards.json").read_text())
    assert [s["cells"] for s in shards] == [[0], [1, 2]]
    # the same records, concatenated shard by shard; no shard folders left behind
    for name in ("requests.parquet", "batches.parquet", "rounds.parquet"):
        rows = sorted_rows(sharded / name)
        assert rows == sorted_rows(single / name), name
        assert len(rows) > 50
    for name in ("requests.csv", "rounds.csv"):
        lines = (sharded / name).read_text().splitlines()
        expected = (single / name).read_text().splitlines()
        assert lines[0] == expected[0] and sorted(lines[1:]) == sorted(expected[1:])
    assert sorted(p.name for p in sharded.iterdir() if p.is_dir()) == []
    attribution = json.loads((sharded / "attribution.json").read_text())
    assert attribution == json.loads((single / "attribution.json").read_text())
    # shard by shard: the first shard's rows (cell 0) come first
    requests = pq.read_table(sharded / "requests.parquet").column("request_id").to_pylist()
    cells_in_order = [int(r.split("-")[0][1:]) for r in requests]
    assert cells_in_order == sorted(cells_in_order, key=lambda c: 0 if c == 0 else 1)


def test_more_shards_than_cells_runs_one_per_cell_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pinned.yaml"
    path.write_text(yaml.safe_dump(pinned()))
    out = tmp_path / "run"
    args = ["sim", str(path), "--shards", "9", "--quiet", "--no-plots", "--out", str(out)]
    assert main(args) == 0
    assert len(json.loads((out / "shards.json").read_text())) == 3
    assert "--shards 9: the scenario has 3 cells, so it ran as 3 shards" in capsys.readouterr().out


def test_concatenating_record_folders_checks_them(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no record folders"):
        concatenate_records(tmp_path, [])
    a, b = tmp_path / "a", tmp_path / "b"
    for part, rounds in ((a, True), (b, False)):
        with RecordFiles(part, rounds=rounds):
            pass
    with pytest.raises(ValueError, match=r"rounds.csv is missing from \['.*b'\]"):
        concatenate_records(tmp_path, [a, b])


def test_shards_finishing_out_of_order_are_kept_in_cell_order() -> None:
    data = pinned(duration_s=5.0)
    run = simulate_sharded(data, 3, ReversedExecutor())
    assert [s.cells for s in run.shards] == [(0,), (1,), (2,)]
    assert run.metrics == run_scenario(scenario_from_dict(data))


def test_an_unpinned_scenario_is_refused_before_the_progress_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bar started before the shards were planned: the refusal came after its blank
    line."""
    from edgespec.cli import main

    assert main(["sim", "duration_s=1", "--shards", "2", "--out", str(tmp_path / "r")]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err == (
        "edgespec sim: --shards: only a scenario whose device pools are pinned to server pools "
        "(auto_topology.devices[*].server_pools) can be sharded\n"
    )
