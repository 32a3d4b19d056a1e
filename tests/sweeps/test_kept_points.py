"""A sweep stopped (Ctrl-C, a point's failure) and run again resumes: each finished point
was kept as it finished (edgespec.sweeps.kept_points), and the same sweep runs only the
rest, with the uninterrupted sweep's results. It lost every finished point (a 2,000-point
sweep stopped at 99 % started over)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.metrics.types import SystemMetrics
from edgespec.sim.commands import run as sim_run
from edgespec.sweeps.grid import run_sweep
from edgespec.sweeps.kept_points import KEPT_FOR_S, KeptPoints, prune, sweep_key
from tests.sweeps.test_capacity import metrics_with_violations

GRID = {"seed": [0, 1, 2, 3]}


class Runs:
    """A run giving each seed its own metrics, recording the seeds it ran; ``stop_at``: it
    is stopped (KeyboardInterrupt) when it reaches that seed."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.ran: list[int] = []
        self.stop_at = stop_at

    def __call__(self, scenario: Mapping[str, Any]) -> SystemMetrics:
        if scenario["seed"] == self.stop_at:
            raise KeyboardInterrupt
        self.ran.append(scenario["seed"])
        return metrics_with_violations(scenario["seed"])


def test_a_stopped_sweep_resumes_with_the_uninterrupted_results(tmp_path: Path) -> None:
    kept = KeptPoints.for_sweep(tmp_path, {"seed": 0}, GRID)
    with pytest.raises(KeyboardInterrupt):
        run_sweep({"seed": 0}, GRID, Runs(stop_at=2), progress=False, kept=kept)
    assert sorted(kept.kept(4)) == [0, 1]
    again = Runs()
    resumed = run_sweep({"seed": 0}, GRID, again, progress=False, kept=kept)
    assert again.ran == [2, 3]
    whole = run_sweep({"seed": 0}, GRID, Runs(), progress=False)
    assert [p.metrics for p in resumed] == [p.metrics for p in whole]
    assert [dict(p.overrides) for p in resumed] == [dict(p.overrides) for p in whole]


def test_a_resumed_sweep_says_what_it_kept_in_a_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a terminal (a log, CI) the bar's lines come at its tenths, at most one each
    5 s: the kept points' line, a moment after the start's, was dropped."""
    kept = KeptPoints.for_sweep(tmp_path, {"seed": 0}, GRID)
    with pytest.raises(KeyboardInterrupt):
        run_sweep({"seed": 0}, GRID, Runs(stop_at=2), progress=False, kept=kept)
    capsys.readouterr()
    run_sweep({"seed": 0}, GRID, Runs(), progress=True, kept=kept)
    lines = capsys.readouterr().err.splitlines()
    assert "sweep: 2 kept by an earlier run of this sweep" in lines


def test_another_sweep_or_other_code_finds_nothing_and_a_bad_entry_runs_again(
    tmp_path: Path,
) -> None:
    kept = KeptPoints.for_sweep(tmp_path, {"seed": 0}, GRID)
    kept.keep(0, metrics_with_violations(0))
    kept.keep(1, metrics_with_violations(1))
    (kept.folder / "point-1.pickle").write_bytes(b"cut off")
    assert list(kept.kept(4)) == [0]  # the unreadable one is run again
    assert KeptPoints.for_sweep(tmp_path, {"seed": 0}, {"seed": [0, 1]}).kept(2) == {}
    assert KeptPoints.for_sweep(tmp_path, {"seed": 9}, GRID).kept(4) == {}
    here = Path("/here")
    assert sweep_key({"seed": 0}, GRID, "a", here) != sweep_key({"seed": 0}, GRID, "b", here)


def test_the_grids_key_order_and_the_commands_folder_make_another_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--sweep a=.. b=..`` numbers its points otherwise than ``b=.. a=..``: the second,
    resumed, found the first's points by number (a point of duration 1,500 s came back with
    the metrics of one of 1 s). A relative path is read against the command's folder: the
    same sweep from another folder reads other files (it took the first's points)."""
    two = {"duration_s": [1, 1500], "seed": [0, 1]}
    swapped = {"seed": [0, 1], "duration_s": [1, 1500]}
    assert KeptPoints.for_sweep(tmp_path, {}, two) != KeptPoints.for_sweep(tmp_path, {}, swapped)
    here = KeptPoints.for_sweep(tmp_path, {}, two)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert KeptPoints.for_sweep(tmp_path, {}, two) != here


def test_the_command_says_what_it_kept_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("EDGESPEC_SWEEPS_CACHE", str(tmp_path / "cache" / "sweeps"))
    real = sim_run.run_scenario_dict

    def failing_at_seed_2(data: dict[str, Any]) -> Any:
        if data["seed"] == 2:
            raise KeyboardInterrupt
        return real(data)

    sweep = ["sim", "duration_s=3", "--sweep", "seed=0,1,2", "--quiet", "--no-plots"]
    monkeypatch.setattr(sim_run, "run_scenario_dict", failing_at_seed_2)
    assert main([*sweep, "--out", str(tmp_path / "a")]) == 130
    err = capsys.readouterr().err
    assert (
        "sweep: 2 finished point(s) kept in " in err
        and "the same command runs only the rest" in err
    )
    assert not (tmp_path / "a").exists()  # the stopped command's folder is removed as before
    ran: list[int] = []

    def counting(data: dict[str, Any]) -> Any:
        ran.append(data["seed"])
        return real(data)

    monkeypatch.setattr(sim_run, "run_scenario_dict", counting)
    assert main([*sweep, "--out", str(tmp_path / "a")]) == 0
    assert ran == [2]
    assert list((tmp_path / "cache" / "sweeps").iterdir()) == []  # done: removed
    assert main([*sweep, "--out", str(tmp_path / "b")]) == 0  # uninterrupted
    assert ran == [2, 0, 1, 2]
    for name in ("sweep.json", "sweep.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_sweep_left_unused_for_a_week_is_removed_when_a_sweep_starts(tmp_path: Path) -> None:
    old, recent = tmp_path / "old", tmp_path / "recent"
    for folder in (old, recent):
        folder.mkdir()
        (folder / "point-0.pickle").write_bytes(b"x")
    os.utime(old, (1_000_000.0, 1_000_000.0))
    os.utime(recent, (1_000_000.0 + KEPT_FOR_S, 1_000_000.0 + KEPT_FOR_S))
    prune(tmp_path, now_s=1_000_001.0 + KEPT_FOR_S)
    assert [p.name for p in tmp_path.iterdir()] == ["recent"]
