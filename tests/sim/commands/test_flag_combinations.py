"""``edgespec sim``'s flag checks (edgespec.sim.commands.flags) on combinations the
other flag tests leave out: all three run kinds at once, a flag given as 0 where it does
not apply, an empty --capacity key, a --sweep spec that is also a file name, a bad
--engine; each a one-line error before anything runs."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.sim.commands.flags import add_arguments, check_flags


def checked(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(argv)
    check_flags(args)
    return args


def refused(*argv: str) -> str:
    with pytest.raises(UserInputError) as error:
        checked(*argv)
    return str(error.value)


def test_all_three_run_kinds_are_named() -> None:
    assert refused(
        "--sweep", "seed=1,2", "--capacity", "auto_topology.devices.0.count", "--shards", "2"
    ) == ("--sweep and --capacity and --shards exclude each other; give one")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--lo", "0", "--sweep", "seed=1"], "--lo applies only to --capacity, not to --sweep"),
        (["--hi", "0"], "--hi applies only to --capacity, not to a plain run"),
        (["--epsilon", "0"], "--epsilon applies only to --capacity, not to a plain run"),
        (["--slo-class", ""], "--slo-class applies only to --capacity, not to a plain run"),
        (["--address", "", "--capacity", "k"], "--address applies only to --sweep or --shards, "
         "not to --capacity"),
    ],
)  # fmt: skip
def test_a_flag_given_as_zero_or_empty_is_still_given(flags: list[str], message: str) -> None:
    assert refused(*flags) == message


def test_an_empty_capacity_key_is_refused_before_the_bounds() -> None:
    assert refused("--capacity", "", "--lo", "5", "--hi", "1") == (
        "--capacity needs a scenario key, e.g. auto_topology.devices.0.count"
    )


def test_a_sweep_spec_that_is_also_a_file_name_is_a_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only an argument without ``=`` is taken for a misplaced scenario file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "seed=1,2").write_text("name: x\n")
    assert checked("--sweep", "seed=1,2").sweep == ["seed=1,2"]


def test_an_address_with_ray_is_kept_and_defaults_are_filled_in() -> None:
    args = checked("--shards", "3", "--engine", "ray", "--address", "h:1")
    assert (args.engine, args.address, args.workers, args.shards) == ("ray", "h:1", 1, 3)
    assert (args.lo, args.hi, args.epsilon) == (1, 1000, 0.05)


def test_an_unknown_engine_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["sim", "--sweep", "seed=1,2", "--engine", "dask"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "edgespec sim: error: argument --engine: invalid choice: 'dask'" in err
    assert "local" in err and "ray" in err
