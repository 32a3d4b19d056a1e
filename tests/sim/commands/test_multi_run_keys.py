"""``edgespec sim --sweep/--capacity/--shards`` (edgespec.sim.commands.flags, run): a key
that an override also sets, or a ``--capacity`` KEY that is no key or whose field is not an
integer, is one line naming the flag, exit status 2, before any run and before the run
folder is made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.sim.commands.flags import check_capacity_key
from tests.sim.helpers import tiny_scenario


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=2.0)))
    return path


def _error(
    args: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    def never(*args: Any) -> None:
        raise AssertionError("a run started")

    monkeypatch.setattr("edgespec.sim.commands.run.run_scenario_dict", never)
    out = tmp_path / "out"
    assert main(["sim", *args, "--quiet", "--no-plots", "--out", str(out)]) == 2
    assert not out.exists()
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["seed=5", "--sweep", "seed=1,2"],
            "--sweep seed: the override seed=5 sets it too, and each sweep run would "
            "replace that; give seed in one place",
        ),
        (  # the second --sweep's key holds the overridden field
            ["auto_topology.devices.0.count=3", "--sweep", "seed=1,2", "--sweep",
             "auto_topology.devices.0={name: x}"],
            "--sweep auto_topology.devices.0: the override auto_topology.devices.0.count=3 "
            "sets it too, and each sweep run would replace that; give "
            "auto_topology.devices.0 in one place",
        ),
        (
            ["auto_topology.devices.0.count=3", "--capacity", "auto_topology.devices.0.count"],
            "--capacity auto_topology.devices.0.count: the override "
            "auto_topology.devices.0.count=3 sets it too, and each capacity probe would "
            "replace that; give auto_topology.devices.0.count in one place",
        ),
    ],
)  # fmt: skip
def test_a_key_an_override_sets_too_is_refused(
    args: list[str],
    message: str,
    scenario_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    got = _error([str(scenario_file), *args], tmp_path, capsys, monkeypatch)
    assert got == f"edgespec sim: {message}\n"


def test_a_field_swept_inside_an_overridden_one_runs(scenario_file: Path, tmp_path: Path) -> None:
    """Sweeping a field inside an overridden one refines it (the override still acts)."""
    out = tmp_path / "out"
    window = "policies.window={name: static, params: {gamma: 2}}"
    sweep = ["--sweep", "policies.window.params.gamma=3,4"]
    assert main(["sim", str(scenario_file), window, *sweep, "--quiet", "--out", str(out)]) == 0
    points = json.loads((out / "sweep.json").read_text())
    assert [p["overrides"] for p in points] == [
        {"policies.window.params.gamma": 3},
        {"policies.window.params.gamma": 4},
    ]


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("a..b", "--capacity 'a..b': empty key segment"),
        (
            "seed=3",
            "--capacity seed=3: KEY is a scenario key without a value (the search sets its "
            "values from --lo to --hi)",
        ),
    ],
)
def test_a_capacity_key_that_is_no_key_names_the_flag(
    key: str,
    message: str,
    scenario_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    got = _error([str(scenario_file), "--capacity", key], tmp_path, capsys, monkeypatch)
    assert got == f"edgespec sim: {message}\n"


def test_shards_of_an_unpinned_scenario_leave_no_run_folder(
    scenario_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _error([str(scenario_file), "--shards", "2"], tmp_path, capsys, monkeypatch) == (
        "edgespec sim: --shards: only a scenario whose device pools are pinned to server pools "
        "(auto_topology.devices[*].server_pools) can be sharded\n"
    )


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("duration_s", "float"),
        ("slo_classes.slow", "float"),
        ("fast_path", "bool"),
        ("auto_topology.devices.0.name", "str"),
        ("mode", "one of ['distributed', 'fused', 'centralized']"),
        ("auto_topology.servers", "a list"),
        ("auto_topology.servers.0", "a section"),
    ],
)
def test_a_capacity_key_of_a_field_that_is_no_integer_is_refused(
    key: str,
    kind: str,
    scenario_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The search sets whole numbers: a float field would be probed at those only."""
    got = _error([str(scenario_file), "--capacity", key], tmp_path, capsys, monkeypatch)
    field = key.replace(".0", "[0]")
    assert got == (
        f"edgespec sim: --capacity {key}: scenario field {field} is {kind}, not an integer "
        "(the search sets whole numbers); give an integer count, e.g. "
        "auto_topology.devices.0.count\n"
    )


@pytest.mark.parametrize(
    "key", ["auto_topology.devices.0.count", " auto_topology.devices.12.count"]
)
def test_a_capacity_key_of_a_device_count_passes(key: str) -> None:
    check_capacity_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "seed",  # an integer, though not a count: violations need not rise with it
        "auto_topology.servers.0.count",  # violations fall as servers are added
        "auto_topology.servers.0.max_batch_size",
        "policies.window.params.gamma",  # untyped (a policy's param)
        "auto_topology.devices.count",  # no pool index
    ],
)
def test_a_capacity_key_that_is_no_device_count_is_refused(
    key: str,
    scenario_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bisection over anything else than devices returns a number that means nothing."""
    got = _error([str(scenario_file), "--capacity", key], tmp_path, capsys, monkeypatch)
    assert got == (
        f"edgespec sim: --capacity {key}: the search finds the most devices within "
        "--epsilon (WISP Eq. 20), assuming violations grow with KEY; give a device pool's "
        "count, auto_topology.devices.<i>.count\n"
    )
