"""Two runs of one sweep at once (same scenario, grid and package files) shared its
kept-points folder: both ran every point, and the first to finish removed the folder
under the other, whose next point's write then failed. Now a run holds the folder
(edgespec.sweeps.kept_points.KeptPoints.held) and a second run meanwhile is refused at
once, naming the folder and the process holding it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.sim.commands import run as sim_run
from edgespec.sweeps.kept_points import KEPT_FOR_S, LOCK_FILE, KeptPoints, prune, sweeps_cache
from tests.sweeps.test_capacity import metrics_with_violations

SWEEP = ["sim", "duration_s=3", "--sweep", "seed=0,1", "--quiet", "--no-plots"]
CLI = "import sys; from edgespec.cli import console_main; sys.exit(console_main(sys.argv[1:]))"


def test_a_second_process_running_the_same_sweep_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """While this process's sweep runs its first point, another process runs the same
    command (another --out): refused, status 2, before running any point."""
    second: list[subprocess.CompletedProcess[str]] = []

    def run_with_a_second(data: dict[str, Any]) -> Any:
        if not second:
            command = [sys.executable, "-c", CLI, *SWEEP, "--out", str(tmp_path / "b")]
            second.append(subprocess.run(command, capture_output=True, text=True, timeout=120))
        return metrics_with_violations(int(data["seed"]))

    monkeypatch.setattr(sim_run, "run_scenario_dict", run_with_a_second)
    assert main([*SWEEP, "--out", str(tmp_path / "a")]) == 0
    assert (tmp_path / "a" / "sweep.csv").is_file()
    assert capsys.readouterr().out.splitlines()[-1].startswith("sweep: 2 runs → ")
    refused = second[0]
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith(
        f"edgespec sim: sweep: another run of this sweep (process {os.getpid()}) is using "
        f"its kept points in {sweeps_cache()}/"
    )
    assert refused.stderr.count("\n") == 1  # one line
    assert not (tmp_path / "b").exists()  # the refused command's folder removed
    assert list(sweeps_cache().iterdir()) == []  # the first run done: its folder removed


def test_a_held_sweep_is_refused_until_its_holder_ends(tmp_path: Path) -> None:
    kept = KeptPoints(tmp_path / "key")
    with kept.held():
        kept.keep(0, metrics_with_violations(0))
        with pytest.raises(UserInputError) as caught, KeptPoints(tmp_path / "key").held():
            pass
        assert str(caught.value) == (
            f"sweep: another run of this sweep (process {os.getpid()}) is using its kept "
            f"points in {tmp_path / 'key'}; wait for it to end, or stop it and run this "
            "command again (it runs only the points left)"
        )
        assert list(kept.kept(1)) == [0]  # the refusal removed nothing
    with KeptPoints(tmp_path / "key").held() as again:  # ended: the next run takes it
        assert list(again.kept(1)) == [0]


def test_a_held_folder_that_keeps_no_point_is_removed_and_prune_spares_a_held_one(
    tmp_path: Path,
) -> None:
    with KeptPoints(tmp_path / "empty").held():  # its checks refused a point: nothing kept
        assert (tmp_path / "empty" / LOCK_FILE).is_file()
    assert not (tmp_path / "empty").exists()
    old = KeptPoints(tmp_path / "old")
    with old.held():
        old.keep(0, metrics_with_violations(0))
        os.utime(old.folder, (1_000_000.0, 1_000_000.0))
        prune(tmp_path, now_s=1_000_001.0 + KEPT_FOR_S)  # a week unused, but in use
        assert list(old.kept(1)) == [0]
    prune(tmp_path, now_s=1e12)  # no longer held: removed
    assert not old.folder.exists()
