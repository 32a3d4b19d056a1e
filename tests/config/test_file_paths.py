"""A scenario file's relative file paths are read against its own folder (a folder of
scenarios and the files they name moves whole), an override's against the current folder
(the user typed it there); bundled names and absolute paths are kept as written; and a
run folder's scenario.yaml, its paths absolute, reruns the run from anywhere."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config.file_paths import FILE_FIELDS, anchored, names_a_relative_file
from edgespec.sim.setup.resolve import resolve
from edgespec.sim.setup.scenario import load_scenario
from tests.sim.helpers import tiny_scenario

BUNDLED = Path(__file__).resolve().parents[2] / "edgespec" / "data" / "hardware" / "profiles"
PROFILE = "auto_topology.servers[0].cost_model.profile"


def _with_profile(profile: str) -> dict[str, Any]:
    data = tiny_scenario(duration_s=2.0)
    data["auto_topology"]["servers"][0]["cost_model"] = {"kind": "wisp", "profile": profile}
    return data


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``scenarios/s.yaml`` naming ``../profiles/p.yaml`` (a copy of Table 12's profile),
    the command run from ``elsewhere/``."""
    (tmp_path / "profiles").mkdir()
    shutil.copy(BUNDLED / "a100-qwen3-32b.yaml", tmp_path / "profiles" / "p.yaml")
    (tmp_path / "scenarios").mkdir()
    text = yaml.safe_dump(_with_profile("../profiles/p.yaml"), sort_keys=False)
    (tmp_path / "scenarios" / "s.yaml").write_text(text)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    return tmp_path


def test_a_relative_profile_is_read_beside_the_scenario_file(layout: Path) -> None:
    scenario = load_scenario(Path("..") / "scenarios" / "s.yaml")
    profile = scenario.auto_topology.servers[0].cost_model.profile
    assert profile == str(layout.resolve() / "scenarios" / ".." / "profiles" / "p.yaml")
    resolve(scenario)  # the profile loads: the file beside the scenario, not ./../profiles


def test_an_overrides_path_is_read_against_the_current_folder(layout: Path) -> None:
    here = layout / "elsewhere" / "mine.yaml"
    shutil.copy(BUNDLED / "a100-qwen3-32b.yaml", here)
    scenario = load_scenario(layout / "scenarios" / "s.yaml", [f"{_override()}=mine.yaml"])
    assert scenario.auto_topology.servers[0].cost_model.profile == "mine.yaml"
    resolve(scenario)


def _override() -> str:
    return PROFILE.replace("[0]", ".0")


def test_a_missing_file_is_named_where_it_was_looked_for(
    layout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (layout / "profiles" / "p.yaml").unlink()
    assert main(["sim", "../scenarios/s.yaml", "--quiet", "--no-plots", "--out", "r"]) == 2
    looked = layout.resolve() / "scenarios" / ".." / "profiles" / "p.yaml"
    assert capsys.readouterr().err == (
        f"edgespec sim: ../scenarios/s.yaml:32: config field '{PROFILE}': {looked}: file not "
        "found\n"
    )


def test_a_run_folders_scenario_reruns_from_anywhere(
    layout: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file's path and an override's, both relative where given, are absolute in the
    run folder's scenario.yaml: it reruns the same run from another folder."""
    shutil.copy(BUNDLED / "edge-50tps.yaml", layout / "elsewhere" / "edge.yaml")
    device = "auto_topology.devices.0.cost_model={kind: wisp, profile: edge.yaml}"
    args = ["--quiet", "--no-plots", "--out"]
    assert main(["sim", "../scenarios/s.yaml", device, *args, "run"]) == 0
    ran = yaml.safe_load((layout / "elsewhere" / "run" / "scenario.yaml").read_text())
    topology = ran["auto_topology"]
    assert topology["servers"][0]["cost_model"]["profile"] == str(
        layout.resolve() / "scenarios" / ".." / "profiles" / "p.yaml"
    )
    assert topology["devices"][0]["cost_model"]["profile"] == str(
        layout.resolve() / "elsewhere" / "edge.yaml"
    )
    monkeypatch.chdir(layout)
    assert main(["sim", "elsewhere/run/scenario.yaml", *args, "again"]) == 0
    first = (layout / "elsewhere" / "run" / "metrics.json").read_text()
    assert (layout / "again" / "metrics.json").read_text() == first
    capsys.readouterr()


def test_only_relative_file_paths_are_anchored(tmp_path: Path) -> None:
    data: dict[str, Any] = {
        "auto_topology": {
            "devices": [{"cost_model": {"kind": "zhu", "profile": "rtx3080-tinyllama-1.1b-zhu"}}],
            "servers": [{"cost_model": {"kind": "wisp", "profile": "/abs/p.yaml"}}, {}],
        },
        "acceptance": {"kind": "trace", "traces": ["gsm8k", "t.jsonl", "sub/t"]},
        "verification": {"rule": "semantic", "table": "gemma3-270m"},
        "policies": {"batching": "fcfs", "window": {"name": "awc", "params": {"file": "w.json"}}},
        "pipeline": {"draft_profile": "d.yml", "simulation": {"traces": ["x.jsonl"]}},
        "workload": {"kind": "trace", "trace": 5},  # not a path: validation says so
    }
    got: Any = anchored(data, tmp_path)
    here = str(tmp_path.resolve())
    assert got["auto_topology"] == data["auto_topology"]  # a bundled name, an absolute path
    assert got["acceptance"]["traces"] == ["gsm8k", f"{here}/t.jsonl", f"{here}/sub/t"]
    assert got["verification"] == data["verification"]
    assert got["policies"]["window"]["params"]["file"] == f"{here}/w.json"
    assert got["pipeline"] == {
        "draft_profile": f"{here}/d.yml",
        "simulation": {"traces": [f"{here}/x.jsonl"]},
    }
    assert got["workload"] == data["workload"]
    assert data["acceptance"]["traces"] == ["gsm8k", "t.jsonl", "sub/t"]  # not changed
    assert not names_a_relative_file("a100-qwen3-32b") and names_a_relative_file("p.yml")
    assert len(FILE_FIELDS) == len(set(FILE_FIELDS))
