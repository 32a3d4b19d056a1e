"""A scenario names its simulator with ``system:`` (edgespec.sim.setup.system): the fleet
by default, the drafting server when it says so; a drafting server's section without the
key is refused with what to write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.sim.drafting_server.scenario import pipeline_scenario_from_dict
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.setup.system import system_of
from tests.sim.helpers import tiny_scenario

MISSING = (
    "config field 'system': a 'pipeline:' section configures the drafting-server simulator "
    "(Zhu et al.): add 'system: drafting_server'"
)
FLEET = (
    "config field 'system': is fleet, but the 'pipeline:' section configures the "
    "drafting-server simulator (Zhu et al.): set 'system: drafting_server', or drop the "
    "section for a fleet scenario"
)
FLEET_FIELD = (
    "config field 'duration_s': unknown field; known: ['name', 'pipeline', 'seed', 'system']: "
    "duration_s is a fleet scenario's field (system: fleet); a drafting-server scenario "
    "(system: drafting_server) has its own, its settings under 'pipeline:' (docs/SIMULATOR.md, "
    '"Edge drafting server (Zhu et al.)")'
)


@pytest.mark.parametrize(
    ("data", "system"),
    [
        ({"name": "x"}, "fleet"),
        ({"system": "fleet"}, "fleet"),
        ({"system": "drafting_server", "pipeline": {}}, "drafting_server"),
        ({"system": "drafting_server"}, "drafting_server"),
    ],
)
def test_the_system_a_scenario_names(data: dict[str, Any], system: str) -> None:
    assert system_of(data) == system


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"pipeline": {"num_users": 3}}, MISSING),
        ({"system": "fleet", "pipeline": {}}, FLEET),  # said fleet: not "add" it
        (
            {"system": "drafting-server"},
            "config field 'system': unknown system 'drafting-server'; known: "
            "['fleet', 'drafting_server'] (did you mean 'drafting_server'?)",
        ),
    ],
)
def test_a_wrong_system_says_what_to_write(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        system_of(data)
    assert str(error.value) == message


def test_each_scenario_form_takes_only_its_own_system() -> None:
    assert scenario_from_dict(tiny_scenario(system="fleet")).system == "fleet"
    with pytest.raises(ConfigError) as error:
        scenario_from_dict(tiny_scenario(system="drafting_server"))
    assert str(error.value) == (
        "config field 'system': must be one of ['fleet'], got 'drafting_server'"
    )
    assert pipeline_scenario_from_dict({"system": "drafting_server"}).system == "drafting_server"
    with pytest.raises(ConfigError) as error:
        pipeline_scenario_from_dict({"system": "fleet"})
    assert str(error.value) == (
        "config field 'system': must be one of ['drafting_server'], got 'fleet'"
    )


def test_the_command_refuses_a_pipeline_section_without_the_system(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump({"name": "old", "pipeline": {"num_users": 3}}))
    assert main(["sim", str(path), "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"edgespec sim: {MISSING}"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("system=fleet", FLEET),
        ("duration_s=5", FLEET_FIELD),
        ("workload.kind=poisson", FLEET_FIELD.replace("duration_s", "workload")),
        (
            "nmae=x",
            "config field 'nmae': unknown field; known: ['name', 'pipeline', 'seed', 'system'] "
            "(did you mean 'name'?)",
        ),
    ],
)
def test_a_drafting_server_scenario_says_which_form_a_field_belongs_to(
    override: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``edgespec sim zhu-pipeline system=fleet`` was told to add the system it had just
    changed; ``duration_s=5`` was an unknown field with no word that the drafting server's
    form has its own fields; a misspelt one still gets the closest name."""
    args = ["sim", "zhu-pipeline", override, "--quiet", "--out", str(tmp_path / "o")]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == f"edgespec sim: {message}"
    assert not (tmp_path / "o").exists()


def test_a_fleet_field_in_a_drafting_server_file_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "z.yaml"
    path.write_text("system: drafting_server\nduration_s: 5\npipeline: {num_users: 2}\n")
    assert main(["sim", str(path), "--quiet", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"edgespec sim: {path}:2: {FLEET_FIELD}"
    with pytest.raises(ConfigError) as error:  # the form's own reader says it too
        pipeline_scenario_from_dict(yaml.safe_load(path.read_text()))
    assert str(error.value) == FLEET_FIELD
