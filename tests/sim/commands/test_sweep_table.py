"""What a sweep prints (edgespec.sweeps.sweep_table): up to MAX_POINT_ROWS points, a row
per point; more, one table of each metric's range over them, whatever their number (a
2,000-point sweep printed 4,013 lines, two rows per point); every point's row in
sweep.csv."""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from edgespec.cli import main
from edgespec.metrics.summary import print_runs
from edgespec.sweeps.grid import SweepPoint
from edgespec.sweeps.sweep_table import MAX_POINT_ROWS, RANGE_HEADERS, range_rows
from tests.sweeps.test_capacity import metrics_with_violations


def _by_seed(data: dict[str, Any]) -> Any:
    """Metrics of half the scenario's seed violations in 100 (no simulation: fast)."""
    return metrics_with_violations(int(data["seed"]) // 2)


def _sweep(
    seeds: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """The stdout lines of ``edgespec sim --sweep seed=0,...`` over ``seeds`` seeds."""
    monkeypatch.setattr("edgespec.sim.commands.run.run_scenario_dict", _by_seed)
    out = tmp_path / f"s{seeds}"
    values = ",".join(str(seed) for seed in range(seeds))
    assert (
        main(["sim", "duration_s=3", "--sweep", f"seed={values}", "--quiet", "--out", str(out)])
        == 0
    )
    with (out / "sweep.csv").open(newline="") as fh:
        assert [row["seed"] for row in csv.DictReader(fh)] == [str(s) for s in range(seeds)]
    return capsys.readouterr().out.splitlines()


def test_a_large_sweep_prints_one_table_of_bounded_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = {n: _sweep(n, tmp_path, monkeypatch, capsys) for n in (MAX_POINT_ROWS + 1, 200)}
    assert len(lines[200]) == len(lines[MAX_POINT_ROWS + 1]) < 40  # not 2 lines a point
    assert lines[200][0].strip().startswith("sweep of 200 points")
    violation = next(line for line in lines[200] if "SLO violation" in line)
    cells = [cell.strip() for cell in violation.split("│")[2:7]]
    assert cells == ["0.0%", "49.5%", "99.0%", "0", "198"]  # the seeds where they are
    assert lines[200][-2].strip() == "at: the point's seed"
    assert lines[200][-1].startswith("sweep: 200 runs → ")


def test_a_small_sweep_prints_a_row_per_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _sweep(MAX_POINT_ROWS, tmp_path, monkeypatch, capsys)
    rows = [line for line in lines if line.startswith("│ ") and line[2:4].strip().isdigit()]
    assert len(rows) == 2 * MAX_POINT_ROWS  # the metrics' table and the classes' table
    assert lines[-1].startswith(f"sweep: {MAX_POINT_ROWS} runs → ")


def test_the_range_rows_are_the_points_least_median_and_greatest() -> None:
    points = [
        SweepPoint(i, {"seed": seed, "fused": seed > 20}, metrics_with_violations(seed))
        for i, seed in enumerate([30, 10, 20, 50])
    ]
    rows = {row[0]: row[1:] for row in range_rows(points)}
    assert all(len(row) + 1 == len(RANGE_HEADERS) for row in rows.values())
    assert rows["SLO violation"] == ["10.0%", "25.0%", "50.0%", "10, false", "50, true"]
    assert rows["c8 attainment"] == ["50.0%", "75.0%", "90.0%", "50, true", "10, false"]
    assert rows["acceptance"] == ["75.0%", "75.0%", "75.0%", "30, true", "30, true"]  # ties
    assert rows["unfinished"] == ["-"] * 5  # summarize() was not told: not counted


def test_the_unfinished_row_ranges_over_the_points_that_counted_them() -> None:
    base = metrics_with_violations(10)
    counted = [(1, 7), (2, None), (3, 1200), (4, 0)]
    points = [
        SweepPoint(i, {"seed": seed}, dataclasses.replace(base, num_unfinished_requests=n))
        for i, (seed, n) in enumerate(counted)
    ]
    rows = {row[0]: row[1:] for row in range_rows(points)}
    assert rows["unfinished"] == ["0", "7", "1200", "4", "3"]


def _caption(runs: list[Any]) -> str:
    """What print_runs writes under its table of ``runs`` (the lines after the table)."""
    out = io.StringIO()
    print_runs([({"seed": i}, m) for i, m in enumerate(runs)], Console(file=out, width=80))
    lines = out.getvalue().splitlines()
    last = max(i for i, line in enumerate(lines) if line.startswith("└"))
    return " ".join(" ".join(lines[last + 1 :]).split())


def test_the_caption_names_the_sure_misses_where_a_run_counted_some() -> None:
    base = dataclasses.replace(metrics_with_violations(10), slo_classes=())
    runs = [
        dataclasses.replace(base, num_unfinished_requests=n, num_unfinished_missed=m)
        for n, m in [(7, 0), (12, 3), (9, None)]
    ]
    assert _caption(runs) == (
        "unfinished at the end: 7 to 12 requests a run (0 to 3 of them sure to miss)"
    )
    assert _caption(runs[::2]) == "unfinished at the end: 7 to 9 requests a run"
    assert _caption([base]) == ""
