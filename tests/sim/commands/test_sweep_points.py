"""``edgespec sim --sweep`` as its points run: a refusal raised while a point runs (its
checks passed) names the point, as a check's does, and comes at once, the pending points
cancelled; the progress bars go to stderr (stdout is the table alone); the sweep's folder
holds what reruns it (scenario.yaml, command.json), as a capacity search's does."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.sim.commands.run import run_scenario_dict
from tests.sim.helpers import tiny_scenario

SLOW_POINT_S = 30.0
"""How long a point other than the refused one runs in the promptness test."""


def refused_at_seed_2(data: dict[str, Any]) -> Any:
    """A run refusing seed 2 (as a file removed after the checks would), the others slow."""
    if data["seed"] == 2:
        raise ConfigError(
            "stop_predictor.policy.params.file", "stop predictor file sb.json does not exist"
        )
    time.sleep(SLOW_POINT_S)
    raise AssertionError("a slow point was waited for")


def refused_at_seed_2_else_run(data: dict[str, Any]) -> Any:
    if data["seed"] == 2:
        return refused_at_seed_2(data)
    return run_scenario_dict(data)


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=2.0)))
    return path


REFUSED = (
    "edgespec sim: config field 'stop_predictor.policy.params.file': at sweep point 2 of 3 "
    "(seed=2): stop predictor file sb.json does not exist\n"
)


def test_a_point_refused_as_it_runs_is_named_and_ends_the_sweep_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("edgespec.sim.commands.run.run_scenario_dict", refused_at_seed_2)
    out = tmp_path / "run"
    flags = ["--sweep", "seed=1,2,3", "--workers", "2", "--quiet", "--out", str(out)]
    started = time.monotonic()
    assert main(["sim", str(_scenario(tmp_path)), *flags]) == 2
    assert time.monotonic() - started < SLOW_POINT_S / 3  # not after the slow points
    assert capsys.readouterr().err == REFUSED
    assert not out.exists()


def test_a_serial_sweep_names_the_point_refused_as_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("edgespec.sim.commands.run.run_scenario_dict", refused_at_seed_2_else_run)
    out = tmp_path / "run"
    flags = ["--sweep", "seed=1,2,3", "--quiet", "--out", str(out)]
    assert main(["sim", str(_scenario(tmp_path)), *flags]) == 2
    kept, refused = capsys.readouterr().err.split("\n", 1)
    assert kept.startswith("sweep: 1 finished point(s) kept in ")  # seed=1, for a rerun
    assert refused == REFUSED
    assert not out.exists()


def test_the_sweep_bars_go_to_stderr_and_stdout_is_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["sim", str(_scenario(tmp_path)), "--sweep", "seed=1,2", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    for bar in ("checking 2 sweep points", "preparing 2 runs", "sweep: done seed="):
        assert bar in printed.err
        assert bar not in printed.out
    assert "[progress" not in printed.err  # the bar's style, not its markup, shown
    assert printed.out.lstrip().startswith("sweep")  # the table's title first
    assert printed.out.splitlines()[-1].startswith("sweep: 2 runs → ")


def test_a_sweep_folder_reruns_its_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = tmp_path / "first"
    flags = ["--sweep", "seed=1,2", "--quiet", "--out", str(first)]
    assert main(["sim", str(_scenario(tmp_path)), "duration_s=1.5", *flags]) == 0
    command = json.loads((first / "command.json").read_text())["command"]
    scenario = str((first / "scenario.yaml").resolve())
    assert command == [
        "edgespec", "sim", scenario, "--sweep", "seed=1,2", "--workers", "1", "--engine", "local"
    ]  # fmt: skip
    assert yaml.safe_load((first / "scenario.yaml").read_text())["duration_s"] == 1.5
    monkeypatch.chdir(tmp_path / "..")  # from anywhere
    again = tmp_path / "again"
    assert main([*command[1:], "--quiet", "--out", str(again)]) == 0
    capsys.readouterr()
    assert json.loads((again / "sweep.json").read_text()) == json.loads(
        (first / "sweep.json").read_text()
    )


def test_a_capacity_folder_reruns_its_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tiny_scenario(duration_s=20.0)
    data["slo_classes"] = {"loose": 0.001}
    data["auto_topology"]["devices"][0]["slo_mix"] = {"loose": 1}
    path = tmp_path / "loose.yaml"
    path.write_text(yaml.safe_dump(data))
    first, key = tmp_path / "first", "auto_topology.devices.0.count"
    flags = ["--capacity", key, "--lo", "2", "--hi", "4", "--quiet", "--out", str(first)]
    assert main(["sim", str(path), *flags]) == 0
    command = json.loads((first / "command.json").read_text())["command"]
    scenario = str((first / "scenario.yaml").resolve())
    assert command == [
        "edgespec", "sim", scenario, "--capacity", key, "--lo", "2", "--hi", "4",
        "--epsilon", "0.05",
    ]  # fmt: skip
    monkeypatch.chdir(tmp_path / "..")
    again = tmp_path / "again"
    assert main([*command[1:], "--quiet", "--out", str(again)]) == 0
    capsys.readouterr()
    assert json.loads((again / "capacity.json").read_text()) == json.loads(
        (first / "capacity.json").read_text()
    )
