"""A profile name that is neither a YAML file nor a bundled preset is refused for what it
is (edgespec.hardware.profile_source): a file-like name (a suffix, a folder, or one that
exists) that is missing is ``file not found``, an existing one says which suffixes a
profile takes, and only a bare unknown name lists the presets."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.config import ConfigError, ConfigFileError
from edgespec.hardware.cost_models import ZhuCost, available, load_profile

TAKEN = "; a profile is a .yaml or .yml file"
"""How the refusal of an existing file of another kind ends."""


@pytest.mark.parametrize(
    ("name", "message"),
    [  # each was "config field 'profile': no hardware/profiles preset named '<name>'; ..."
        ("prof.json", "prof.json: a .json file" + TAKEN),
        ("gone.json", "gone.json: file not found"),
        ("sub/p", "sub/p: file not found"),
        ("folder", "folder: a folder" + TAKEN),
        ("folder/", "folder: a folder" + TAKEN),
        ("bare", "bare: a file without a suffix" + TAKEN),
    ],
)
def test_a_file_like_name_is_refused_as_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prof.json").write_text("kind: wisp\n")
    (tmp_path / "bare").write_text("kind: wisp\n")
    (tmp_path / "folder").mkdir()
    with pytest.raises(ConfigFileError) as info:
        load_profile(name)
    assert str(info.value) == message


def test_a_missing_yaml_and_an_unknown_bare_name_keep_their_messages() -> None:
    with pytest.raises(ConfigFileError) as missing:
        load_profile("x.yaml")
    assert str(missing.value) == "x.yaml: file not found"
    with pytest.raises(ConfigError) as unknown:
        load_profile("nope")
    assert str(unknown.value) == (
        "config field 'profile': no hardware/profiles preset named 'nope'; known: "
        f"{available('hardware/profiles')}"
    )


def test_a_preset_with_a_dot_in_its_name_is_the_preset() -> None:
    """``rtx3080-tinyllama-1.1b-zhu`` has a suffix (``.1b-zhu``) but is a preset's name."""
    cost = load_profile("rtx3080-tinyllama-1.1b-zhu")
    assert isinstance(cost, ZhuCost) and cost.model.name == "tinyllama-1.1b"


def test_the_simulator_names_the_field_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``edgespec sim`` with a JSON profile: exit 2, one line at the field that named it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prof.json").write_text("{}\n")
    scenario = Path(__file__).parents[2] / "edgespec" / "data" / "scenarios" / "default.yaml"
    cost = "auto_topology.servers.0.cost_model={kind: wisp, profile: prof.json}"
    assert main(["sim", str(scenario), cost, "--quiet", "--no-plots"]) == 2
    assert capsys.readouterr() == (
        "",
        "edgespec sim: config field 'auto_topology.servers[0].cost_model.profile': "
        f"prof.json: a .json file{TAKEN}\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prof.json"]
