"""sweep.csv's columns (edgespec.sweeps.columns.flatten): a list of records keyed by the field
that names its entries, so a column means one batch size or one SLO class in every row;
sweep.json and sweep.csv written whole or not at all; swept values as the user typed them."""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import typing
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.metrics.types import BatchSizeCount, SystemMetrics
from edgespec.sweeps.columns import LIST_KEYS, flatten
from edgespec.sweeps.grid import SweepPoint, write_sweep
from tests.sim.helpers import tiny_scenario
from tests.sweeps.test_capacity import metrics_with_violations


def point(index: int, seed: Any, sizes: dict[int, int], cls: str = "c8") -> SweepPoint:
    metrics = dataclasses.replace(
        metrics_with_violations(index, total=4, cls=cls),
        batch_sizes=tuple(BatchSizeCount(size, n) for size, n in sizes.items()),
    )
    return SweepPoint(index, MappingProxyType({"seed": seed}), metrics)


def keyed_columns(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    keyed = [c for c in rows[0] if c.startswith(("batch_sizes.", "slo_classes."))]
    return keyed, [{c: row[c] for c in keyed} for row in rows]


def test_two_runs_with_different_histograms_share_columns_by_batch_size(tmp_path: Path) -> None:
    """The 21st entry was batch size 32 in one row and 21 in the next, under one column."""
    points = [point(0, 0, {1: 5, 4: 2, 32: 1}), point(1, 1, {1: 3, 2: 6, 21: 4}, cls="c4")]
    _, csv_path = write_sweep(tmp_path / "sweep", points)
    columns, rows = keyed_columns(csv_path)
    assert columns == [
        "slo_classes.c4.target_tokens_per_s",
        "slo_classes.c4.num_requests",
        "slo_classes.c4.num_with_target",
        "slo_classes.c4.num_met",
        "slo_classes.c4.attainment",
        "slo_classes.c4.num_unfinished_with_target",
        "slo_classes.c4.num_unfinished_missed",
        "slo_classes.c4.attainment_at_least",
        "slo_classes.c4.attainment_at_most",
        "slo_classes.c8.target_tokens_per_s",
        "slo_classes.c8.num_requests",
        "slo_classes.c8.num_with_target",
        "slo_classes.c8.num_met",
        "slo_classes.c8.attainment",
        "slo_classes.c8.num_unfinished_with_target",
        "slo_classes.c8.num_unfinished_missed",
        "slo_classes.c8.attainment_at_least",
        "slo_classes.c8.attainment_at_most",
        "batch_sizes.1.num_batches",
        "batch_sizes.2.num_batches",
        "batch_sizes.4.num_batches",
        "batch_sizes.21.num_batches",
        "batch_sizes.32.num_batches",
    ]
    none = [""] * 9
    assert [list(row.values()) for row in rows] == [
        [*none, "8.0", "4", "4", "4", "1.0", "", "", "", "", "5", "", "2", "", "1"],
        ["8.0", "4", "4", "3", "0.75", "", "", "", "", *none, "3", "6", "", "4", ""],
    ]


def test_a_swept_key_that_is_also_a_metric_is_one_column(tmp_path: Path) -> None:
    metrics = metrics_with_violations(0, total=4)
    points = [SweepPoint(0, MappingProxyType({"duration_s": 10.0}), metrics)]
    _, csv_path = write_sweep(tmp_path / "sweep", points)
    header = csv_path.read_text().splitlines()[0].split(",")
    assert header[:3] == ["index", "duration_s", "num_servers"]
    assert header.count("duration_s") == 1


def test_a_list_of_scalars_is_by_position_and_a_record_list_needs_a_key_field() -> None:
    assert flatten({"server_utilization": [0.5, 0.25], "a": {"b": []}}) == {
        "server_utilization.0": 0.5,
        "server_utilization.1": 0.25,
    }
    with pytest.raises(ValueError) as info:
        flatten({"probes": [{"value": 1}]})
    assert str(info.value) == "probes: a list of records with no key field in LIST_KEYS"
    with pytest.raises(ValueError) as info:
        flatten({"batch_sizes": [{"batch_size": 2, "num_batches": 1}] * 2})
    assert str(info.value) == "batch_sizes: two entries with batch_size 2"
    with pytest.raises(ValueError) as info:
        flatten({"batch_sizes": [{"num_batches": 1}]})
    assert str(info.value) == "batch_sizes: entry {'num_batches': 1} has no batch_size"
    with pytest.raises(ValueError) as info:
        flatten({"a.b": 1, "a": {"b": 2}})
    assert str(info.value) == "two values for column 'a.b'"


def test_every_list_of_records_in_the_metrics_has_a_key_field() -> None:
    lists = {}
    for name, hint in typing.get_type_hints(SystemMetrics).items():
        entry = typing.get_args(hint)[0] if typing.get_origin(hint) is tuple else None
        if dataclasses.is_dataclass(entry):
            lists[name] = [f.name for f in dataclasses.fields(entry)]
    assert sorted(lists) == sorted(LIST_KEYS)
    assert all(LIST_KEYS[name] in fields for name, fields in lists.items())


class Unwritable(float):
    """A number that fails as its CSV cell is written (after the rows before it); JSON
    writes it as a float."""

    def __repr__(self) -> str:
        raise RuntimeError("cut off")


def test_a_sweep_csv_that_fails_midway_leaves_the_old_file(tmp_path: Path) -> None:
    (tmp_path / "sweep.csv").write_text("old\n")
    points = [point(0, 0, {1: 1}), point(1, Unwritable(1.5), {1: 1})]
    with pytest.raises(RuntimeError, match="cut off"):
        write_sweep(tmp_path / "sweep", points)
    assert (tmp_path / "sweep.csv").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.csv", "sweep.json"]


def test_a_sweep_json_that_fails_midway_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    (tmp_path / "sweep.json").write_text("old\n")
    monkeypatch.setattr("edgespec.output_paths.os.fsync", full)
    with pytest.raises(OSError, match="No space left") as raised:
        write_sweep(tmp_path / "sweep", [point(0, 0, {1: 1})])
    assert raised.value.filename == str(tmp_path / "sweep.json")
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.json"]
    assert (tmp_path / "sweep.json").read_text() == "old\n"


def test_swept_true_false_and_null_are_written_as_typed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``edgespec sim --sweep fast_path=false,true workload.max_output_tokens=null,50``: the
    table and sweep.csv say ``false``, ``true`` and ``null`` (they said ``False``, ``True``
    and ``None``); sweep.json keeps JSON's own values."""
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(yaml.safe_dump(tiny_scenario(duration_s=1.0)))
    out = tmp_path / "s"
    sweep = ["--sweep", "fast_path=false,true", "workload.max_output_tokens=null,50"]
    assert main(["sim", str(scenario), *sweep, "--quiet", "--out", str(out)]) == 0
    table = capsys.readouterr().out
    shown = [re.findall(r"^│ (\w+) +│ (\w+) +│", line) for line in table.splitlines()]
    assert [row[0] for row in shown if row] == [
        ("false", "null"),
        ("false", "50"),
        ("true", "null"),
        ("true", "50"),
    ]
    with (out / "sweep.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["fast_path"], r["workload.max_output_tokens"]) for r in rows] == [
        ("false", "null"),
        ("false", "50"),
        ("true", "null"),
        ("true", "50"),
    ]
    records = json.loads((out / "sweep.json").read_text())
    assert [r["overrides"] for r in records][:2] == [
        {"fast_path": False, "workload.max_output_tokens": None},
        {"fast_path": False, "workload.max_output_tokens": 50},
    ]


def test_a_point_that_finished_no_request_has_every_rows_columns(tmp_path: Path) -> None:
    """A run that finished no request has null latencies and time split: its row had an
    always-empty ``ttft`` column beside the other rows' ``ttft.p99_s``, and a sweep of such
    points had no ``ttft.*`` column at all (a script reading ``ttft.p99_s`` failed or not
    with the load). Now each is its fields, empty."""
    empty = dataclasses.replace(
        metrics_with_violations(0, total=4), ttft=None, service_ttft=None, tpot=None, e2e=None,
        time_split=None,
    )  # fmt: skip
    for points in ([point(0, 0, {1: 1}), SweepPoint(1, MappingProxyType({"seed": 1}), empty)],
                   [SweepPoint(0, MappingProxyType({"seed": 0}), empty)]):  # fmt: skip
        _, csv_path = write_sweep(tmp_path / "sweep", points)
        with csv_path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        for name in ("ttft", "service_ttft", "tpot", "e2e", "time_split"):
            assert name not in rows[0]
        assert rows[-1]["ttft.p99_s"] == "" and rows[-1]["time_split.queue_share"] == ""


def test_a_swept_key_that_is_a_metric_too_is_one_column_as_typed(tmp_path: Path) -> None:
    """``--sweep duration_s=1`` showed ``1.0``, the metric of that name written over it."""
    metrics = dataclasses.replace(metrics_with_violations(0, total=4), duration_s=1.0)
    _, csv_path = write_sweep(
        tmp_path / "sweep", [SweepPoint(0, MappingProxyType({"duration_s": 1}), metrics)]
    )
    with csv_path.open(newline="") as f:
        header, row = next(csv.reader(f)), next(csv.DictReader(csv_path.open(newline="")))
    assert header.count("duration_s") == 1 and header[:2] == ["index", "duration_s"]
    assert row["duration_s"] == "1"
