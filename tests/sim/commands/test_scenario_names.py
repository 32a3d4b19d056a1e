"""``edgespec sim`` takes a bundled scenario by name (edgespec/data/scenarios/), from any
folder, lists the names in its help, and ends an unknown name's, key's or policy's error
with the closest known one (edgespec.errors.did_you_mean)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.config.scenario_files import bundled_scenarios, bundled_scenarios_dir, scenario_path
from edgespec.errors import did_you_mean
from edgespec.policies.registry import BATCHING
from tests.sim.helpers import tiny_scenario

QUIET = ["--quiet", "--no-plots"]
SMALL = ["duration_s=0.2", "auto_topology.devices.0.count=4", "auto_topology.servers.0.count=2"]


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder outside the repository, as the working directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["sim", *args, *QUIET]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_the_bundled_scenarios_are_the_data_files() -> None:
    files = sorted(p.stem for p in bundled_scenarios_dir().glob("*.yaml"))
    assert bundled_scenarios() == files
    assert {"bench", "bench-cells", "bench-cells-100k", "default"} <= set(files)


@pytest.mark.parametrize("name", ["bench-cells", "bench-cells.yaml"])
def test_a_bundled_scenario_runs_by_name_from_any_folder(name: str, elsewhere: Path) -> None:
    out = elsewhere / "run"
    assert main(["sim", name, *SMALL, *QUIET, "--out", str(out)]) == 0
    ran = yaml.safe_load((out / "scenario.yaml").read_text())
    assert ran["name"] == "bench-cells" and ran["auto_topology"]["cells"] == 2
    assert json.loads((out / "metrics.json").read_text())["duration_s"] == 0.2


def test_a_name_resolves_to_the_bundled_file_and_a_file_comes_first(elsewhere: Path) -> None:
    bundled = bundled_scenarios_dir() / "bench.yaml"
    assert scenario_path("bench") == bundled
    assert scenario_path("bench.yaml") == bundled
    (elsewhere / "bench.yaml").write_text(yaml.safe_dump(tiny_scenario()))
    assert scenario_path("bench.yaml") == Path("bench.yaml")  # the file here, not the name


def test_a_folder_of_a_bundled_scenarios_name_does_not_hide_it(elsewhere: Path) -> None:
    """``edgespec sim wisv`` beside a ``wisv/`` folder said "wisv: is a directory, not a
    file"."""
    (elsewhere / "wisv").mkdir()
    assert scenario_path("wisv") == bundled_scenarios_dir() / "wisv.yaml"


def test_the_help_lists_the_bundled_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["sim", "--help"])
    assert exit_info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"({', '.join(bundled_scenarios())};" in help_text
    assert "bench, bench-cells, bench-cells-100k, default" in help_text


def test_a_misspelt_scenario_name_gets_the_closest_name(
    elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _error(["bench-cels"], capsys) == (
        "edgespec sim: bench-cels: no such scenario file "
        "(an override looks like key.path=value) (did you mean 'bench-cells'?)\n"
    )
    assert _error(["defualt.yaml"], capsys) == (
        "edgespec sim: defualt.yaml: file not found (did you mean 'default'?)\n"
    )
    path = "edgespec/data/scenarios/bench.yaml"  # the repository's path, from elsewhere
    assert _error([path], capsys) == (
        f"edgespec sim: {path}: file not found (did you mean 'bench'?)\n"
    )
    assert _error(["missing.yaml"], capsys) == "edgespec sim: missing.yaml: file not found\n"


def test_a_bundled_name_after_sweep_says_where_it_goes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _error(["--sweep", "seed=1,2", "bench-cells"], capsys) == (
        "edgespec sim: --sweep bench-cells: a scenario file goes before --sweep "
        "(--sweep takes every argument up to the next option as a key=v1,v2,... spec)\n"
    )


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=2.0)))
    return path


KNOWN = (
    "['acceptance', 'auto_topology', 'cloud_only_draft_pass', 'deadline_rule', 'draft_probs', "
    "'dsdsim_compat', 'duration_s', 'fast_path', 'fused_rounds', 'links', 'min_p', "
    "'mode', 'name', 'policies', 'record_rounds', 'seed', 'slo_classes', 'stop_predictor', "
    "'system', 'temperature', 'top_k', 'top_p', 'verification', 'workload']"
)


def test_a_misspelt_override_key_gets_the_closest_key(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _error([str(scenario_file), "auto_topolgy.cells=2"], capsys) == (
        f"edgespec sim: config field 'auto_topolgy': unknown field; known: {KNOWN} "
        "(did you mean 'auto_topology'?)\n"
    )
    err = _error([str(scenario_file), "workload.thinktime_s=1"], capsys)
    assert err.startswith("edgespec sim: config field 'workload.thinktime_s': unknown field;")
    assert err.endswith("] (did you mean 'think_time_s'?)\n")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_misspelt_sweep_key_is_refused_before_any_run(
    workers: str, scenario_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every point is validated first: one line with the suggestion, no run folder (and no
    worker process's traceback)."""
    out = tmp_path / "sweep"
    sweep = ["--sweep", "seed=1,2", "auto_topolgy.cells=1,2", "--workers", workers]
    assert _error([str(scenario_file), *sweep, "--out", str(out)], capsys) == (
        "edgespec sim: config field 'auto_topolgy': at sweep point 1 of 4 (seed=1 "
        f"auto_topolgy.cells=1): unknown field; known: {KNOWN} (did you mean 'auto_topology'?)\n"
    )
    assert not out.exists()


def test_a_misspelt_yaml_key_gets_the_closest_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tiny_scenario(duration_s=2.0)
    data["duraton_s"] = data.pop("duration_s")
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(data))
    line = path.read_text().splitlines().index("duraton_s: 2.0") + 1
    assert _error([str(path)], capsys) == (
        f"edgespec sim: {path}:{line}: config field 'duraton_s': unknown field; known: {KNOWN} "
        "(did you mean 'duration_s'?)\n"
    )


def test_a_misspelt_policy_name_gets_the_closest_name(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _error([str(scenario_file), "policies.batching.name=fcsf"], capsys) == (
        "edgespec sim: config field 'policies.batching.name': unknown batching policy 'fcsf'; "
        f"known: {sorted(BATCHING)} (did you mean 'fcfs'?)\n"
    )


def test_a_misspelt_slo_class_gets_the_closest_class(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(scenario_file), "--capacity", "auto_topology.devices.0.count"]
    assert _error([*args, "--slo-class", "fats"], capsys) == (
        "edgespec sim: --slo-class fats: the scenario has no such SLO class; "
        "known: ['fast', 'slow'] (did you mean 'fast'?)\n"
    )


def test_nothing_close_adds_nothing() -> None:
    assert did_you_mean("duration_s", bundled_scenarios()) == ""
    assert did_you_mean("fcsf", ["fcfs", "lab", "wisp"]) == " (did you mean 'fcfs'?)"
    # a name without its unit: the one name that adds it, not the closest spelling
    fields = ["trace", "rate_per_s", "ramp_s", "think_time_s", "think_min_s"]
    assert did_you_mean("rate", fields) == " (did you mean 'rate_per_s'?)"  # was 'trace'
    assert did_you_mean("ramp", fields) == " (did you mean 'ramp_s'?)"
    assert did_you_mean("think", fields) == " (did you mean 'think_min_s'?)"  # two: closest
    assert did_you_mean("x", []) == ""
