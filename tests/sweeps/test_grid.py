"""Sweep grids: CLI parsing, cartesian runs with overrides, CSV/JSON output."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.config import ConfigError
from edgespec.metrics import SystemMetrics
from edgespec.sweeps import progress
from edgespec.sweeps.grid import (
    grid_points,
    override_text,
    parse_grid,
    run_sweep,
    write_sweep,
)
from tests.sweeps.executors import ReversedExecutor
from tests.sweeps.test_capacity import metrics_with_violations


def test_parse_grid_values_are_yaml() -> None:
    grid = parse_grid(
        [
            "servers.count=1,2,4",
            "policies.batching.name=fcfs, lab",
            "net.rtt_ms=1e-05,2.5",
            "w=[1,2],[3]",
        ]
    )
    assert grid == {
        "servers.count": [1, 2, 4],
        "policies.batching.name": ["fcfs", "lab"],
        "net.rtt_ms": [1e-05, 2.5],  # YAML 1.2: an exponent makes a float
        "w": [[1, 2], [3]],
    }
    assert parse_grid(['name="a,b",c']) == {"name": ["a,b", "c"]}
    assert parse_grid(["a=null,1"]) == {"a": [None, 1]}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("servers.count", "^--sweep 'servers.count': must look like key.path=v1,v2,...$"),
        ("a..b=1", "^--sweep 'a..b=1': empty key segment$"),
        ("=1,2", "^--sweep '=1,2': empty key$"),
        ("a=", "config field 'a': sweep needs at least one value after '='"),
        ("a=1,2,", "config field 'a': empty value at the end of sweep values '1,2,'"),
        (
            "a=1,,2",
            "'a': cannot parse sweep values '1,,2': expected the node content, but found ','",
        ),
        ("a=[1,2", "config field 'a': cannot parse sweep values '\\[1,2'"),
    ],
)
def test_parse_grid_errors(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_grid([spec])


def test_parse_grid_rejects_duplicate_keys() -> None:
    with pytest.raises(ConfigError, match="config field 'a': swept twice"):
        parse_grid(["a=1", "a=2"])


def test_grid_points_order_and_empty_values() -> None:
    assert grid_points({"a": [1, 2], "b": ["x", "y"]}) == [
        {"a": 1, "b": "x"},
        {"a": 1, "b": "y"},
        {"a": 2, "b": "x"},
        {"a": 2, "b": "y"},
    ]
    with pytest.raises(ConfigError, match="config field 'b': sweep needs a non-empty list"):
        grid_points({"a": [1], "b": []})


@pytest.mark.parametrize("value", [4, 2.5, 1e-05, "fcfs", "yes", "1", None, True, [1, 2], {"k": 1}])
def test_override_text_round_trips(value: Any) -> None:
    from edgespec.config import parse_override

    keys, parsed = parse_override(override_text("a.b", value))
    assert keys == ["a", "b"]
    assert parsed == value and type(parsed) is type(value)


def test_run_sweep_applies_overrides_in_product_order(tmp_path: Path) -> None:
    base = {"devices": {"count": 1}, "policies": {"window": {"name": "static"}}}
    seen: list[dict[str, Any]] = []

    def runner(scenario: dict[str, Any]) -> SystemMetrics:
        seen.append(scenario)
        return metrics_with_violations(scenario["devices"]["count"], total=10)

    grid = parse_grid(["devices.count=1,3", "policies.window.gamma=2,4", "new.key=x"])
    points = run_sweep(base, grid, runner, progress=False)
    assert [dict(p.overrides) for p in points] == [
        {"devices.count": 1, "policies.window.gamma": 2, "new.key": "x"},
        {"devices.count": 1, "policies.window.gamma": 4, "new.key": "x"},
        {"devices.count": 3, "policies.window.gamma": 2, "new.key": "x"},
        {"devices.count": 3, "policies.window.gamma": 4, "new.key": "x"},
    ]
    assert seen[1] == {
        "devices": {"count": 1},
        "policies": {"window": {"name": "static", "gamma": 4}},
        "new": {"key": "x"},
    }
    assert base == {"devices": {"count": 1}, "policies": {"window": {"name": "static"}}}
    assert [p.metrics.slo_violation_rate for p in points] == [0.1, 0.1, 0.3, 0.3]

    json_path, csv_path = write_sweep(tmp_path / "out" / "sweep", points)
    assert (json_path.name, csv_path.name) == ("sweep.json", "sweep.csv")
    records = json.loads(json_path.read_text())
    assert records[2]["overrides"] == {
        "devices.count": 3,
        "policies.window.gamma": 2,
        "new.key": "x",
    }
    assert records[2]["slo_violation_rate"] == 0.3
    rows = list(csv.DictReader(csv_path.open()))
    assert list(rows[0])[:5] == [
        "index",
        "devices.count",
        "policies.window.gamma",
        "new.key",
        "duration_s",
    ]
    assert [r["slo_violation_rate"] for r in rows] == ["0.1", "0.1", "0.3", "0.3"]
    assert rows[3]["slo_classes.c8.num_met"] == "7"
    assert rows[0]["server_utilization.0"] == "0.0"
    assert rows[0]["tpot.p50_s"] == str(0.5 / 7)


def test_override_into_non_mapping_names_the_key() -> None:
    def runner(scenario: dict[str, Any]) -> SystemMetrics:
        raise AssertionError("must not run")

    with pytest.raises(
        ConfigError, match=r"config field 'devices.count': list index must be 0..1, got 'count'"
    ):
        run_sweep({"devices": [1, 2]}, {"devices.count": [1]}, runner, progress=False)


def test_blank_values_and_a_string_for_a_list_are_refused() -> None:
    with pytest.raises(ConfigError, match="config field 'a': sweep needs at least one value"):
        parse_grid(["a=  "])
    with pytest.raises(ConfigError, match="config field 'a': sweep needs a non-empty list"):
        grid_points({"a": "xy"})  # not the two values 'x' and 'y'


def test_override_text_refuses_a_value_that_does_not_round_trip() -> None:
    # YAML folds a NEL (U+0085) in a quoted scalar into a space: the text would set "a b"
    with pytest.raises(ConfigError) as info:
        override_text("a", "a\x85b")
    assert str(info.value) == "config field 'a': value 'a\\x85b' does not survive a YAML round trip"


def test_run_sweep_puts_results_back_in_grid_order(tmp_path: Path) -> None:
    def runner(scenario: dict[str, Any]) -> SystemMetrics:
        n = scenario["devices"]["count"]
        metrics = metrics_with_violations(n, total=10)
        if n == 2:  # a second SLO class on the middle point only: more CSV columns
            extra = metrics_with_violations(0, total=2, cls="c2")
            metrics = dataclasses.replace(
                metrics, slo_classes=metrics.slo_classes + extra.slo_classes
            )
        return metrics

    points = run_sweep(
        {"devices": {"count": 0}},
        {"devices.count": [1, 2, 3]},
        runner,
        progress=False,
        executor=ReversedExecutor(),
    )
    assert [(p.index, p.overrides["devices.count"]) for p in points] == [(0, 1), (1, 2), (2, 3)]
    assert [p.metrics.slo_violation_rate for p in points] == [0.1, 0.2, 0.3]
    _, csv_path = write_sweep(tmp_path / "sweep", points)
    rows = list(csv.DictReader(csv_path.open()))
    assert [r["slo_classes.c2.num_requests"] for r in rows] == ["", "2", ""]  # others empty


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("seed=1,2,1", "1"),
        ("seed=1,1.0", "1.0"),  # the same number
        ("name=fcfs,lab,'fcfs'", "fcfs"),
        ("w=[1,2],[1, 2]", "[1, 2]"),
        ("m={a: 1, b: 2},{b: 2, a: 1}", "{a: 1, b: 2}"),
    ],
)
def test_a_value_given_twice_is_refused(spec: str, shown: str) -> None:
    key = spec.partition("=")[0]
    message = (
        f"config field '{key}': sweep value {shown} repeats an earlier value (the same runs); "
        "give each once"
    )
    with pytest.raises(ConfigError) as error:
        parse_grid([spec])
    assert str(error.value) == message


def test_true_and_one_are_two_sweep_values() -> None:
    assert parse_grid(["x=true,1"]) == {"x": [True, 1]}


def test_a_points_progress_label_shows_its_values_as_typed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``x=false``, not Python's ``x=False`` (and ``null``, not ``None``), as the user typed
    them and as the point's errors name it (:func:`override_text`); every point's line
    shown (no gap between lines)."""
    monkeypatch.setattr(progress, "LINE_GAP_S", 0.0)
    grid = parse_grid(["a.x=false,true", "b=null", "c=[true, null]"])
    run_sweep({}, grid, lambda _: metrics_with_violations(1, total=10), progress=True)
    done = [line for line in capsys.readouterr().err.splitlines() if "done" in line]
    assert [line.rsplit(":", 1)[0] for line in done] == [
        "sweep: done a.x=false b=null c=[true, null]",
        "sweep: done a.x=true b=null c=[true, null]",
    ]
