"""``edgespec sim`` (edgespec.sim.commands.run): bad flags and arguments are one
line naming what is wrong, exit status 2, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from tests.sim.helpers import tiny_scenario


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=2.0)))
    return path


def _error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["sim", *args, "--quiet", "--no-plots"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_address_without_ray_is_a_user_error(
    scenario_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(scenario_file), "--sweep", "seed=1,2", "--address", "host:6379"]
    assert _error([*args, "--out", str(tmp_path / "o")], capsys) == (
        "edgespec sim: --address is a Ray cluster address: it needs --engine ray\n"
    )


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--sweep", "seed=1,2", "--shards", "2"], "--sweep and --shards"),
        (
            ["--capacity", "auto_topology.devices.0.count", "--shards", "2"],
            "--capacity and --shards",
        ),
        (
            ["--sweep", "seed=1,2", "--capacity", "auto_topology.devices.0.count"],
            "--sweep and --capacity",
        ),
    ],
)
def test_run_kinds_exclude_each_other(
    flags: list[str], named: str, scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _error([str(scenario_file), *flags], capsys) == (
        f"edgespec sim: {named} exclude each other; give one\n"
    )


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--workers", "0"), ("--workers", "-2"), ("--shards", "0"), ("--shards", "-1")],
)
def test_workers_or_shards_below_one_is_a_usage_error(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--shards 0`` is not "off" (leave the flag out for one process): argparse's error."""
    with pytest.raises(SystemExit) as exit_info:
        main(["sim", flag, value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.endswith(f"edgespec sim: error: argument {flag}: must be >= 1, got {value}\n")


def test_capacity_bounds_and_epsilon_name_the_flags(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "auto_topology.devices.0.count"
    base = [str(scenario_file), "--capacity", key]
    assert _error([*base, "--lo", "50", "--hi", "10"], capsys) == (
        "edgespec sim: need 1 <= --lo <= --hi, got --lo 50 --hi 10\n"
    )
    assert _error([*base, "--epsilon", "2"], capsys) == (
        "edgespec sim: --epsilon must be in [0, 1], got 2.0\n"
    )


def test_capacity_probe_without_slo_targets_is_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tiny_scenario(duration_s=2.0, slo_classes={"best": None})
    data["auto_topology"]["devices"][0]["slo_mix"] = {"best": 1}
    path = tmp_path / "no-targets.yaml"
    path.write_text(yaml.safe_dump(data))
    key = "auto_topology.devices.0.count"
    args = [str(path), "--capacity", key, "--lo", "1", "--hi", "2", "--out", str(tmp_path / "c")]
    err = _error(args, capsys)
    assert err.startswith(
        "edgespec sim: config field 'auto_topology.devices[0].count': capacity probe at 1: "
        "SLO violation rate undefined"
    )
    assert err.endswith(
        "; give the scenario slo_classes and a duration_s long enough for requests to finish\n"
    )
    assert "Traceback" not in err


def test_scenario_file_after_sweep_says_where_it_goes(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _error(["--sweep", "seed=1,2", str(scenario_file)], capsys) == (
        f"edgespec sim: --sweep {scenario_file}: a scenario file goes before --sweep "
        "(--sweep takes every argument up to the next option as a key=v1,v2,... spec)\n"
    )


def test_an_argument_without_equals_that_is_no_file(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _error(["duration_s"], capsys) == (
        "edgespec sim: duration_s: no such scenario file (an override looks like key.path=value)\n"
    )
    assert _error(["missing.yaml"], capsys) == "edgespec sim: missing.yaml: file not found\n"
    assert _error([str(scenario_file), "seed"], capsys) == (
        f"edgespec sim: two scenario files given, {scenario_file} and seed; only one may be "
        "(an override looks like key.path=value)\n"
    )


PLAIN_OR_SHARDS = "a plain run or --shards"
SWEEP_OR_SHARDS = "--sweep or --shards"


@pytest.mark.parametrize(
    ("flags", "applies", "given"),
    [
        (["--rounds", "--sweep", "seed=1,2"], PLAIN_OR_SHARDS, "--sweep"),
        (
            ["--rounds", "--capacity", "auto_topology.devices.0.count"],
            PLAIN_OR_SHARDS,
            "--capacity",
        ),
        (["--verbose", "--sweep", "seed=1,2"], "a plain run", "--sweep"),
        (["--verbose", "--shards", "2"], "a plain run", "--shards"),
        (["--slo-class", "gold"], "--capacity", "a plain run"),
        (["--count-sure-misses", "--sweep", "seed=1,2"], "--capacity", "--sweep"),
        (["--lo", "3", "--sweep", "seed=1,2"], "--capacity", "--sweep"),
        (["--hi", "3", "--shards", "2"], "--capacity", "--shards"),
        (["--epsilon", "0.1"], "--capacity", "a plain run"),
        (["--workers", "2"], SWEEP_OR_SHARDS, "a plain run"),
        (
            ["--workers", "2", "--capacity", "auto_topology.devices.0.count"],
            SWEEP_OR_SHARDS,
            "--capacity",
        ),
        (["--engine", "local"], SWEEP_OR_SHARDS, "a plain run"),
        (["--engine", "ray", "--address", "h:1"], SWEEP_OR_SHARDS, "a plain run"),
        (
            ["--address", "h:1", "--capacity", "auto_topology.devices.0.count"],
            SWEEP_OR_SHARDS,
            "--capacity",
        ),
    ],
)
def test_a_flag_given_where_it_has_no_effect_is_refused(
    flags: list[str],
    applies: str,
    given: str,
    scenario_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A flag that only some run kinds read is not silently ignored by the others."""
    assert _error([str(scenario_file), *flags], capsys) == (
        f"edgespec sim: {flags[0]} applies only to {applies}, not to {given}\n"
    )


def test_flags_that_apply_are_accepted(scenario_file: Path, tmp_path: Path) -> None:
    """The same flags where they act still run (--capacity's: tests/sim/commands/test_command.py;
    --shards': tests/sim/test_shards.py)."""
    quiet = ["--quiet", "--no-plots"]
    out = tmp_path / "plain"
    assert (
        main(["sim", str(scenario_file), "--rounds", "--verbose", *quiet, "--out", str(out)]) == 0
    )
    assert (out / "rounds.csv").is_file()
    sweep = ["--sweep", "seed=1,2", "--workers", "1", "--engine", "local"]
    assert main(["sim", str(scenario_file), *sweep, *quiet, "--out", str(tmp_path / "s")]) == 0


def test_shards_of_an_unpinned_scenario_names_the_flag(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _error([str(scenario_file), "--shards", "2"], capsys) == (
        "edgespec sim: --shards: only a scenario whose device pools are pinned to server pools "
        "(auto_topology.devices[*].server_pools) can be sharded\n"
    )


def test_an_empty_capacity_key_is_refused(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _error([str(scenario_file), "--capacity", " "], capsys) == (
        "edgespec sim: --capacity needs a scenario key, e.g. auto_topology.devices.0.count\n"
    )


@pytest.mark.parametrize("override", ["a..b=1", ".x=1", "x.=1"])
def test_an_override_with_an_empty_key_segment_is_malformed(
    override: str, scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _error([str(scenario_file), override], capsys) == (
        f"edgespec sim: override '{override}': empty key segment\n"
    )
