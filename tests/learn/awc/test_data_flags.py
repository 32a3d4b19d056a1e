"""`edgespec train awc-data`'s sizing flags, refused while parsing or before any scenario
runs: ``--duration-s`` a finite number of simulated seconds in (0, 3,600] (was a plain
float: NaN or a negative reached the Ray workers), and ``--quick`` not with
``--scenarios`` or ``--duration-s`` (its 4 scenarios of 6 s silently ignored them)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from edgespec.cli import build_parser, main
from edgespec.errors import UserInputError
from edgespec.learn.awc.command import scenario_grid
from edgespec.learn.awc.grid import full_scenarios, quick_scenarios


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nan", "must be a finite number, got 'nan'"),
        ("inf", "must be a finite number, got 'inf'"),
        ("-5", "must be > 0, got -5"),
        ("0", "must be > 0, got 0"),
        ("3600.5", "must be <= 3,600 s, got 3600.5"),
        ("1e9", "must be <= 3,600 s, got 1e+09"),
    ],
)
def test_duration_s_outside_zero_to_an_hour_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["train", "awc-data", "--out", "o", "--duration-s", value])
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: argument --duration-s: {message}\n")


def test_duration_s_up_to_an_hour_is_taken() -> None:
    args = build_parser().parse_args(["train", "awc-data", "--out", "o", "--duration-s", "3600"])
    assert args.duration_s == 3600.0


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--scenarios", "30"], "--scenarios 30"),
        (["--duration-s", "10"], "--duration-s 10"),
        (["--duration-s", "2.5", "--scenarios", "7"], "--scenarios 7 and --duration-s 2.5"),
    ],
)
def test_quick_with_scenarios_or_duration_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], named: str
) -> None:
    out = tmp_path / "d"
    assert main(["train", "awc-data", "--quick", "--out", str(out), *extra]) == 2
    assert capsys.readouterr().err == (
        "edgespec train awc-data: "
        f"--quick runs its own 4 scenarios of 6 simulated s: not with {named}\n"
    )
    assert not out.exists()


def _grid_args(*flags: str) -> argparse.Namespace:
    return build_parser().parse_args(["train", "awc-data", "--out", "o", *flags])


def test_the_grid_defaults_and_the_explicit_flags() -> None:
    assert scenario_grid(_grid_args("--quick")) == quick_scenarios(0)
    assert scenario_grid(_grid_args("--scenarios", "5")) == full_scenarios(5, 0, 20.0)
    sized = scenario_grid(_grid_args("--scenarios", "3", "--duration-s", "7.5", "--seed", "4"))
    assert sized == full_scenarios(3, 4, 7.5)
    assert {s.duration_s for s in sized} == {7.5}


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--w-ttft", "nan", "must be a finite number, got 'nan'"),
        ("--w-tpot", "inf", "must be a finite number, got 'inf'"),
        ("--w-throughput", "-0.5", "must be >= 0, got -0.5"),
        ("--scenarios", "100001", "must be <= 100,000 (the grid is built in memory), got 100001"),
        ("--scenarios", "0", "must be >= 1, got 0"),
        (
            "--contexts-per-run",
            "1001",
            "must be <= 1,000 (train awc reads every context into memory), got 1001",
        ),
        *(
            (
                "--fused-gamma",
                gamma,
                "must be one of the static windows 2 to 12 (its run's acceptance fills the "
                f"fused contexts), got {gamma}",
            )
            for gamma in ("13", "1")  # 13: no static run, the contexts' acceptance was NaN
        ),
        ("--fused-gamma", "0", "must be >= 1, got 0"),
    ],
)
def test_weights_and_sizes_out_of_range_are_usage_errors(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    """The weights were plain floats (NaN passed the >= 0 check), the sizes unbounded."""
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["train", "awc-data", "--out", "o", flag, value])
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: argument {flag}: {message}\n")


def test_the_largest_sizes_are_taken() -> None:
    args = _grid_args("--scenarios", "100000", "--contexts-per-run", "1000", "--fused-gamma", "12")
    assert (args.scenarios, args.contexts_per_run, args.fused_gamma) == (100_000, 1000, 12)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        (("0", "0", "0"), "the --w-* weights are all 0: at least one must be > 0"),
        (("1e308", "1e308", "0"), "the --w-* weights add up to more than a float holds (1.8e308)"),
    ],
)
def test_weights_all_zero_or_adding_up_to_inf_are_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], weights: tuple[str, ...], message: str
) -> None:
    """A sum of inf made every configuration's score inf: a tie, labelled the smallest γ."""
    from edgespec.learn.awc.command import objective_weights

    flags = [f for name, w in zip(("ttft", "tpot", "throughput"), weights, strict=True)
             for f in (f"--w-{name}", w)]  # fmt: skip
    with pytest.raises(UserInputError) as info:
        objective_weights(_grid_args(*flags))
    assert str(info.value) == message
    out = tmp_path / "d"
    assert main(["train", "awc-data", "--quick", "--out", str(out), *flags]) == 2
    assert capsys.readouterr().err == f"edgespec train awc-data: {message}\n"
    assert not out.exists()
    assert objective_weights(_grid_args("--w-ttft", "0", "--w-tpot", "2")) == {
        "ttft": 0.0, "tpot": 2.0, "throughput": 0.25,
    }  # fmt: skip
