"""A cost-model profile file's bad field (edgespec.sim.setup.resolve, the drafting-server
build, edgespec.config.at_field) is named with the file, as WISP batching's profile is
(``FILE.a_s: required field is missing``): one line, exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.sim.helpers import sim_refusal, tiny_scenario


@pytest.fixture
def wisp_without_a_s(tmp_path: Path) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text("kind: wisp\nb_compute_s: 0.001\nb_read_s: 0.001\nc_s: 0.01\n")
    return path


@pytest.mark.parametrize(
    ("override", "named"),
    [
        (
            "auto_topology.servers.0.cost_model={kind: wisp, profile: 'FILE'}",
            "auto_topology.servers[0].cost_model.profile",
        ),
        (
            "auto_topology.devices.0.cost_model={kind: wisp, profile: 'FILE'}",
            "auto_topology.devices[0].cost_model.profile",
        ),
        (  # the form this one already had
            "policies.batching={name: wisp, params: {profile: 'FILE'}}",
            "policies.batching.params.profile",
        ),
    ],
)
def test_a_profile_files_missing_field_is_named_with_its_file(
    override: str,
    named: str,
    wisp_without_a_s: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(yaml.safe_dump(tiny_scenario(duration_s=1.0)))
    given = override.replace("FILE", str(wisp_without_a_s))
    assert sim_refusal([str(scenario), given], tmp_path, capsys) == (
        f"edgespec sim: config field '{named}': {wisp_without_a_s}.a_s: required field is missing\n"
    )


def test_a_zhu_profiles_missing_field_is_named_with_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "z.yaml"
    path.write_text("kind: zhu\nmodel: llama2-7b\nc1_s_per_flop: 1.0e-12\n")
    override = f"pipeline.draft_profile={path}"
    assert sim_refusal(["zhu-pipeline", override], tmp_path, capsys) == (
        f"edgespec sim: config field 'pipeline.draft_profile': {path}.c2_s: required field is "
        "missing\n"
    )
