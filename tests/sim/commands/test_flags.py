"""``edgespec sim``'s flag checks (edgespec.sim.commands.flags) on the parsed flags:
the range checks' inclusive ends, and the defaults filled in for flags not given."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.sim.commands.flags import add_arguments, check_flags
from tests.sim.helpers import tiny_scenario


def checked(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(argv)
    check_flags(args)
    return args


def test_flags_not_given_get_the_documented_defaults() -> None:
    """docs/SIMULATOR.md: "The bounds default to --lo 1 --hi 1000, epsilon to 0.05"."""
    args = checked("--capacity", "auto_topology.devices.0.count")
    assert (args.lo, args.hi, args.epsilon) == (1, 1000, 0.05)
    args = checked("--sweep", "seed=1,2")
    assert (args.workers, args.engine, args.address) == (1, "local", None)


def test_capacity_bounds_and_epsilon_include_their_ends() -> None:
    """A given 0 is kept (not taken for "not given": --lo 0 is refused as 0, below); --lo
    may equal --hi."""
    args = checked(
        "--capacity", "auto_topology.devices.0.count", "--lo", "1", "--hi", "1", "--epsilon", "0"
    )
    assert (args.lo, args.hi, args.epsilon) == (1, 1, 0.0)
    args = checked(
        "--capacity", "auto_topology.devices.0.count", "--lo", "7", "--hi", "7", "--epsilon", "1"
    )
    assert (args.lo, args.hi, args.epsilon) == (7, 7, 1.0)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--lo", "-1"], "need 1 <= --lo <= --hi, got --lo -1 --hi 1000"),
        (["--lo", "0"], "need 1 <= --lo <= --hi, got --lo 0 --hi 1000"),  # a count >= 1
        (["--lo", "8", "--hi", "7"], "need 1 <= --lo <= --hi, got --lo 8 --hi 7"),
        (["--epsilon", "-0.01"], "--epsilon must be in [0, 1], got -0.01"),
        (["--epsilon", "1.01"], "--epsilon must be in [0, 1], got 1.01"),
    ],
)
def test_capacity_flags_just_out_of_range(flags: list[str], message: str) -> None:
    with pytest.raises(UserInputError) as error:
        checked("--capacity", "auto_topology.devices.0.count", *flags)
    assert str(error.value) == message


def test_a_sweep_spec_without_equals_that_is_no_file_is_a_bad_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not "a scenario file goes before --sweep": that is said only of an existing file."""
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=2.0)))
    assert main(["sim", str(path), "--sweep", "seed", "--quiet", "--no-plots"]) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: --sweep 'seed': must look like key.path=v1,v2,...\n"
    )
