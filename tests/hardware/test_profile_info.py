"""What a profile says of itself (role, clock, model, measured range) is read and checked;
a profile of the other role is refused where the simulator would use it, one used beyond
what it measured is said once, and a bad profile is named by its file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.config import ConfigError
from edgespec.hardware.cost_models import load_profile
from edgespec.hardware.profile_info import ProfileInfo, profile_info, range_warning
from edgespec.sim.setup.resolve import resolve
from edgespec.sim.setup.scenario import scenario_from_dict
from tests.sim.helpers import tiny_scenario

COEFFICIENTS = "a_s: 1.0e-5\nb_compute_s: 0.0\nb_read_s: 1.0e-7\nc_s: 1.0e-3\n"


def _profile(tmp_path: Path, name: str, fields: str) -> Path:
    path = tmp_path / name
    path.write_text(f"kind: wisp\n{fields}{COEFFICIENTS}")
    return path


def _resolve(*overrides: str) -> None:
    resolve(scenario_from_dict(tiny_scenario(duration_s=0.5), list(overrides)))


def test_a_bundled_profile_says_nothing_of_itself_and_loads() -> None:
    assert profile_info("a100-qwen3-32b") == ProfileInfo(
        "a100-qwen3-32b", "qwen3-32b", None, None, None, None
    )


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ("role: drafter\n", "role: must be 'target' or 'draft', got 'drafter'"),
        ("clock: gpu\n", "clock: must be 'wall' or 'cpu', got 'gpu'"),
        ("measured_max_batch_size: 0\n", "measured_max_batch_size: must be an integer >= 1, got 0"),
        (
            "measured_max_context_tokens: 1.5\n",
            "measured_max_context_tokens: must be an integer >= 1, got 1.5",
        ),
        ("b_read_s: -1\n", "b_read_s: must be finite and >= 0, got -1.0"),
    ],
)
def test_a_bad_description_field_is_named_by_file_and_field(
    tmp_path: Path, fields: str, problem: str
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(f"kind: wisp\n{fields}" + "".join(
        line + "\n" for line in COEFFICIENTS.splitlines() if line.split(":")[0] not in fields
    ))  # fmt: skip
    with pytest.raises(ConfigError) as info:
        load_profile(str(path))
    field, message = problem.split(": ", 1)
    assert str(info.value) == f"config field '{path}.{field}': {message}"


def test_the_simulator_refuses_a_profile_of_the_other_role(tmp_path: Path) -> None:
    draft = _profile(tmp_path, "p-draft.yaml", "role: draft\n")
    target = _profile(tmp_path, "p.yaml", "role: target\n")
    with pytest.raises(ConfigError) as info:
        _resolve(f"auto_topology.servers.0.cost_model={{kind: wisp, profile: '{draft}'}}")
    assert str(info.value) == (
        f"config field 'auto_topology.servers[0].cost_model.profile': {draft}.role: is 'draft' "
        "(a drafter's cost per propose call), but a server pool's cost model needs a 'target' "
        "profile (NAME.yaml, not NAME-draft.yaml)"
    )
    with pytest.raises(ConfigError) as info:
        _resolve(f"auto_topology.devices.0.cost_model={{kind: wisp, profile: '{target}'}}")
    assert str(info.value) == (
        f"config field 'auto_topology.devices[0].cost_model.profile': {target}.role: is "
        "'target' (a verification pass's cost), but a device pool's cost model needs a "
        "'draft' profile (NAME-draft.yaml)"
    )
    _resolve(f"auto_topology.servers.0.cost_model={{kind: wisp, profile: '{target}'}}",
             f"auto_topology.devices.0.cost_model={{kind: wisp, profile: '{draft}'}}")  # fmt: skip


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "{file}: the file is empty; a profile gives its kind and coefficients"),
        (f"kind: wisp\n{COEFFICIENTS}".replace("a_s: 1.0e-5", "a_s: -1"),
         "{file}.a_s: must be finite and >= 0, got -1.0"),
    ],
)  # fmt: skip
def test_the_simulator_names_the_profile_file_and_field(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        _resolve(f"auto_topology.servers.0.cost_model={{kind: wisp, profile: '{path}'}}")
    assert str(info.value) == (
        "config field 'auto_topology.servers[0].cost_model.profile': " + problem.format(file=path)
    )


def test_a_profile_used_beyond_its_measured_range_is_said_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fields = "role: target\nmeasured_max_batch_size: 6\nmeasured_max_context_tokens: 96\n"
    path = _profile(tmp_path, "p.yaml", fields)
    info = profile_info(str(path))
    assert range_warning(info, 6, 96) is None
    assert range_warning(info, 8, 96) == (
        f"warning: profile {path} is used for batches of up to 8 (measured up to 6): its "
        "times there are extrapolated; profile a grid that covers them"
    )
    from edgespec.sim.commands.checks import say_profile_ranges

    pool = f"{{kind: wisp, profile: '{path}'}}"
    scenario = scenario_from_dict(
        tiny_scenario(duration_s=0.5),
        [f"auto_topology.servers.0.cost_model={pool}", "auto_topology.servers.0.max_batch_size=4",
         "auto_topology.servers.0.kv_budget_tokens=4096"],
    )  # fmt: skip
    say_profile_ranges(scenario)
    assert capsys.readouterr().err == (
        f"edgespec sim: warning: profile {path} is used for contexts of up to 4096 tokens "
        "(measured up to 96): its times there are extrapolated; profile a grid that covers "
        "them\n"
    )
