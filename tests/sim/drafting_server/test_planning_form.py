"""The ``pipeline:`` form's system and planner part (:mod:`edgespec.hardware.drafting_plan`)
is one: the simulator's form extends it with exactly its own sections, and
``edgespec drafting-server --plan``'s loader reads a scenario file's system and planner as
the simulator's loader does, refusing what it refuses there."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

import edgespec
from edgespec.config import ConfigError, read_yaml
from edgespec.hardware.drafting_plan import SIMULATOR_SECTIONS, PipelineSystem, load_planning
from edgespec.sim.drafting_server.scenario import PipelineConfig, pipeline_scenario_from_dict

BUNDLED = Path(edgespec.__file__).parent / "data" / "scenarios" / "zhu-pipeline.yaml"


def _names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_the_simulators_form_adds_exactly_its_sections() -> None:
    assert _names(PipelineConfig) - _names(PipelineSystem) == set(SIMULATOR_SECTIONS)


def test_both_loaders_read_the_same_system_and_planner(tmp_path: Path) -> None:
    data = read_yaml(BUNDLED)
    data["pipeline"] = {
        **data["pipeline"],
        "alpha": 0.7,
        "planner": {"batching": "heuristic", "pipelined": False, "max_spec_len": 5},
        "simulation": {"acceptance": "iid"},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    sim = pipeline_scenario_from_dict(data).pipeline
    runtime = load_planning(path)
    assert runtime == PipelineSystem(**{n: getattr(sim, n) for n in _names(PipelineSystem)})


@pytest.mark.parametrize(
    ("pipeline", "line", "message"),
    [
        ({"alpha": 1.5}, 2, "config field 'pipeline.alpha': must be in [0, 1], got 1.5"),
        ({"planer": {}}, 2, "config field 'pipeline.planer': unknown field"),
        (
            {"planner": {"spec_len": 300}},
            3,
            "config field 'pipeline.planner.spec_len': must be <= 256, got 300",
        ),
        ({"num_users": 10_001}, 2, "config field 'pipeline.num_users': must be <= 10,000"),
        (
            {"planner": {"static_batch_size": 8}},
            3,
            "config field 'pipeline.planner.static_batch_size': applies only to batching: "
            "static (batching is dp); drop it, or set batching: static",
        ),
        (
            {"planner": {"spec_len": 3, "max_spec_len": 6}},
            3,
            "config field 'pipeline.planner.max_spec_len': applies only to spec_len: null, "
            "the best l of 1..max_spec_len (spec_len is 3, a fixed l); drop one of the two",
        ),
    ],
)
def test_both_loaders_refuse_alike(
    pipeline: dict[str, object], line: int, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"pipeline": pipeline, "system": "drafting_server"}))
    with pytest.raises(ConfigError) as sim:
        pipeline_scenario_from_dict({"pipeline": pipeline})
    with pytest.raises(ConfigError) as runtime:
        load_planning(path)
    assert str(sim.value).startswith(message)
    assert str(runtime.value).startswith(f"{path}:{line}: {message}")


def test_an_unknown_key_is_refused_alike_naming_the_simulators_sections_too(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("system: drafting_server\npipeline:\n  simulaton: {}\n")
    message = (
        "config field 'pipeline.simulaton': unknown field; known: ['alpha', 'cell', "
        "'draft_profile', 'max_input_tokens', 'max_output_tokens', 'num_users', 'planner', "
        "'sbs_memory_gb', 'simulation', 'stop_predictor', 'verifier', 'verify_profile'] "
        "(did you mean 'simulation'?)"
    )
    with pytest.raises(ConfigError) as sim:
        pipeline_scenario_from_dict({"pipeline": {"simulaton": {}}})
    with pytest.raises(ConfigError) as runtime:
        load_planning(path)
    assert str(sim.value) == message
    assert str(runtime.value) == f"{path}:3: {message}"


def test_relative_profile_paths_are_read_against_the_files_folder_as_sim_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgespec.sim.setup.scenario import read_scenario_file

    folder = tmp_path / "sub"
    folder.mkdir()
    profile = Path(edgespec.__file__).parent / "data" / "hardware" / "profiles"
    (folder / "v.yaml").write_text((profile / "rtx4500-llama2-7b-zhu.yaml").read_text())
    data = read_yaml(BUNDLED)
    data["pipeline"] = {**data["pipeline"], "verify_profile": "v.yaml"}
    (folder / "s.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)  # not the scenario's folder: v.yaml is not here
    runtime = load_planning("sub/s.yaml")
    sim = read_scenario_file(Path("sub/s.yaml")).data["pipeline"]["verify_profile"]
    assert runtime.verify_profile == sim == str(folder.resolve() / "v.yaml")
