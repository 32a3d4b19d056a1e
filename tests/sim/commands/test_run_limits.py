"""``edgespec sim``'s bounds on what a command line controls: the scenario ``name`` is one
plain folder name (edgespec.sim.run_folder.check_run_name), --out is a non-empty UTF-8
path, --overwrite needs --out, --workers has an upper bound, and a sweep's points are
checked with a progress bar; each refusal one line, exit status 2, before anything runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.errors import UserInputError
from edgespec.sim.commands.flags import add_arguments, check_flags
from edgespec.sim.run_folder import check_run_name, claim_run_folder
from tests.sim.helpers import tiny_scenario

QUIET = ["--quiet", "--no-plots"]
FOLDER = "(it names the run folder runs/<name>-<time>)"


@pytest.fixture
def scenario_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tiny scenario in the working directory (a fresh one: ``runs/`` starts absent)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=1.0)))
    return path


@pytest.mark.parametrize(
    ("override", "problem", "shown"),
    [
        ("name=../../escaped", "must be one folder name, without '/'", "'../../escaped'"),
        ("name=/tmp/abs", "must be one folder name, without '/'", "'/tmp/abs'"),
        ("name=a/b", "must be one folder name, without '/'", "'a/b'"),
        ("name=a\\b", "must be one folder name, without '\\\\'", "'a\\\\b'"),
        ("name=..", "must be one folder name, without '..'", "'..'"),
        ('name=""', "must not be empty", "''"),
        ('name="\\x00"', "must not hold a NUL or other control character", "'\\x00'"),
        ('name="a\\tb"', "must not hold a NUL or other control character", "'a\\tb'"),
        (f"name={'é' * 101}", "must be at most 200 bytes (UTF-8), is 202", repr("é" * 101)),
    ],
)
def test_a_name_that_is_not_one_folder_name_is_refused_and_nothing_written(
    override: str,
    problem: str,
    shown: str,
    scenario_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["sim", str(scenario_file), override, *QUIET]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"edgespec sim: config field 'name': {problem}, got {shown} {FOLDER}\n"
    assert sorted(p.name for p in scenario_file.parent.iterdir()) == ["tiny.yaml"]


def test_the_run_folder_refuses_a_bad_name_itself_and_takes_a_plain_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last line of defence (a scenario validated elsewhere, the drafting server's)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as error:
        claim_run_folder(None, "../x", False, "20250101-000000")
    assert str(error.value) == (
        f"config field 'name': must be one folder name, without '/', got '../x' {FOLDER}"
    )
    with pytest.raises(ConfigError, match=r"must be valid UTF-8, got '\\udcff'"):
        check_run_name("\udcff")  # a non-UTF-8 byte of argv, as Python decodes it
    check_run_name("é" * 100)  # 200 bytes: the most
    assert claim_run_folder(None, "a b.c", False, "t") == Path("runs/a b.c-t")


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main(["sim", *argv])
    assert stop.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


def test_an_empty_or_non_utf8_out_is_a_usage_error(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _usage_error([str(scenario_file), "--out", ""], capsys) == (
        "edgespec sim: error: argument --out: must not be empty (give . for this folder)"
    )
    assert _usage_error([str(scenario_file), "--out", "out/\udcff"], capsys) == (
        "edgespec sim: error: argument --out: out/\\xff is not valid UTF-8; give a UTF-8 path"
    )


def test_overwrite_without_out_is_refused(
    scenario_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sim", str(scenario_file), "--overwrite", *QUIET]) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: --overwrite needs --out (a new runs/<name>-<time> holds no run)\n"
    )
    assert not (scenario_file.parent / "runs").exists()


def checked(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(argv)
    check_flags(args)
    return args


def test_workers_are_bounded_by_four_per_cpu_or_a_cluster_s_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert checked("--sweep", "seed=1,2", "--workers", "8").workers == 8
    with pytest.raises(UserInputError) as error:
        checked("--sweep", "seed=1,2", "--workers", "9")
    assert str(error.value) == "--workers 9: at most 8 (4 per CPU here)"
    with pytest.raises(UserInputError) as error:
        checked("--shards", "2", "--engine", "ray", "--workers", "9")  # a local Ray
    assert str(error.value) == "--workers 9: at most 8 (4 per CPU here)"
    ray = ["--sweep", "seed=1", "--engine", "ray", "--address", "h:1", "--workers"]
    assert checked(*ray, "10000").workers == 10_000
    with pytest.raises(UserInputError) as error:
        checked(*ray, "10001")
    assert str(error.value) == "--workers 10001: at most 10000 (on a Ray cluster)"


def test_a_sweep_checks_its_points_under_a_progress_bar(
    scenario_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from edgespec.sweeps import grid

    bars: list[tuple[bool, list[str], list[int]]] = []

    class Bar:
        def __init__(self, enabled: bool) -> None:
            bars.append((enabled, [], []))

        def __enter__(self) -> Bar:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def add_task(self, description: str, **kwargs: Any) -> int:
            bars[-1][1].append(description)
            bars[-1][2].append(0)
            return len(bars[-1][2]) - 1

        def advance(self, task: int) -> None:
            bars[-1][2][task] += 1

        def update(self, task: int, **kwargs: Any) -> None:
            bars[-1][2][task] += kwargs.get("advance", 0)

    monkeypatch.setattr(grid, "progress_bar", Bar)
    argv = ["sim", str(scenario_file), "--no-plots", "--out", "o", "--sweep", "seed=1,2,3"]
    assert main(argv) == 0
    assert bars == [
        (True, ["checking 3 sweep points"], [3]),
        (True, ["preparing 3 runs", "sweep of 3 runs"], [3, 3]),
    ]
