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
        ({"system": "fleet", "pipeline": {}}, MISSING),
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
