"""The scenario key ``record_rounds: true`` and the ``--rounds`` flag are one thing: either
writes rounds.csv, rounds.parquet and the violation attribution (a plain run, a sharded
one), so a ``--rounds`` run folder's scenario.yaml (which stores ``record_rounds: true``)
reruns with its rounds; a sweep or a capacity search, whose runs keep no records, refuses
the key before any run, as it refuses the flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from tests.sim.helpers import tiny_scenario
from tests.sim.test_shards import pinned

QUIET = ["--quiet", "--no-plots"]
ROUND_FILES = {"rounds.csv", "rounds.parquet", "attribution.json"}


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_the_key_writes_the_rounds_files_the_flag_writes(tmp_path: Path) -> None:
    path = _write(tmp_path, tiny_scenario(duration_s=3.0))
    by_key, by_flag = tmp_path / "key", tmp_path / "flag"
    assert main(["sim", str(path), "record_rounds=true", *QUIET, "--out", str(by_key)]) == 0
    assert main(["sim", str(path), "--rounds", *QUIET, "--out", str(by_flag)]) == 0
    assert _names(by_key) == _names(by_flag) and _names(by_key) >= ROUND_FILES
    for name in ("rounds.csv", "attribution.json", "metrics.json"):
        assert (by_key / name).read_bytes() == (by_flag / name).read_bytes()


def test_a_rounds_run_folder_reruns_with_its_rounds_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, tiny_scenario(duration_s=3.0))
    first = tmp_path / "first"
    assert main(["sim", str(path), "--rounds", *QUIET, "--out", str(first)]) == 0
    assert yaml.safe_load((first / "scenario.yaml").read_text())["record_rounds"] is True
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["sim", str(first / "scenario.yaml"), *QUIET, "--out", "again"]) == 0
    again = elsewhere / "again"
    assert _names(again) >= ROUND_FILES
    assert (again / "rounds.csv").read_bytes() == (first / "rounds.csv").read_bytes()


def test_a_sharded_run_with_the_key_writes_the_attribution(tmp_path: Path) -> None:
    path = _write(tmp_path, pinned())
    out = tmp_path / "run"
    args = ["sim", str(path), "duration_s=3", "record_rounds=true", "--shards", "2"]
    assert main([*args, *QUIET, "--out", str(out)]) == 0
    assert _names(out) >= ROUND_FILES


NO_RECORDS = (
    "applies only to a plain run or --shards, not to {kind}: its runs keep no round records; "
    "drop it (record_rounds=false)"
)


@pytest.mark.parametrize(
    ("args", "context", "kind"),
    [
        (["record_rounds=true", "--sweep", "seed=1,2"], "at sweep point 1 of 2 (seed=1)",
         "--sweep"),
        (["--sweep", "seed=1,2", "record_rounds=false,true"],
         "at sweep point 2 of 4 (seed=1 record_rounds=true)", "--sweep"),
        (["record_rounds=true", "--capacity", "auto_topology.devices.0.count", "--hi", "4"],
         "at lo=1", "--capacity"),
    ],
)  # fmt: skip
def test_a_sweep_or_capacity_search_refuses_the_key_before_any_run(
    args: list[str],
    context: str,
    kind: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def never(data: dict[str, Any]) -> Any:
        raise AssertionError("no run may start")

    monkeypatch.setattr("edgespec.sim.commands.run.run_scenario_dict", never)
    path = _write(tmp_path, tiny_scenario(duration_s=3.0))
    out = tmp_path / "run"
    assert main(["sim", str(path), *args, *QUIET, "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: config field 'record_rounds': {context}: {NO_RECORDS.format(kind=kind)}\n"
    )
    assert not out.exists()


def test_a_files_key_is_refused_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, {**tiny_scenario(duration_s=3.0), "record_rounds": True})
    line = path.read_text().splitlines().index("record_rounds: true") + 1
    out = tmp_path / "run"
    assert main(["sim", str(path), "--sweep", "seed=1,2", *QUIET, "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: {path}:{line}: config field 'record_rounds': at sweep point 1 of 2 "
        f"(seed=1): {NO_RECORDS.format(kind='--sweep')}\n"
    )


def test_rounds_beside_an_override_saying_the_opposite_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flag won silently over ``record_rounds=false`` on the same command line."""
    path, out = _write(tmp_path, tiny_scenario(duration_s=3.0)), tmp_path / "run"
    args = ["sim", str(path), "record_rounds=false", "--rounds", *QUIET, "--out", str(out)]
    assert main(args) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: --rounds: the override record_rounds=false says the opposite; give "
        "one of them\n"
    )
    assert not out.exists()
    assert (
        main(["sim", str(path), "record_rounds=true", "--rounds", *QUIET, "--out", str(out)]) == 0
    )
