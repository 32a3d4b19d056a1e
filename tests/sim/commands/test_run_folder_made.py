"""``edgespec sim`` makes its run folder before the first run (edgespec.sim.run_folder.
made_run_folder): a folder that cannot be made or written is one line naming it, exit
status 2, before any run of a sweep, a capacity search or a sharded run (they used to run
to the end, then fail with the bare ``OSError``); a failed command leaves no folder it
made."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.errors import UserInputError
from edgespec.sim.run_folder import made_run_folder
from tests.sim.helpers import tiny_scenario

MODES = {
    "plain": ([], "edgespec.sim.simulator.simulate"),
    "sweep": (["--sweep", "seed=1,2"], "edgespec.sim.commands.run.run_scenario_dict"),
    "capacity": (
        ["--capacity", "auto_topology.devices.0.count", "--lo", "1", "--hi", "2"],
        "edgespec.sim.commands.run.run_scenario_dict",
    ),
    "shards": (
        ["auto_topology.devices.0.server_pools=[0]", "--shards", "2"],  # one pinned cell
        "edgespec.sim.shards.simulate_sharded",
    ),
}
"""Each mode's flags, and the function that would start its first run."""


def _never(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("a run started")


def _run(tmp_path: Path, out: Path, flags: list[str]) -> int:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=2.0)))
    return main(["sim", str(path), *flags, "--quiet", "--no-plots", "--out", str(out)])


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_run_folder_that_cannot_be_made_fails_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    flags, starts = MODES[mode]
    monkeypatch.setattr(starts, _never)
    out = tmp_path / "blocked" / "run"

    def refuse(self: Path, *args: Any, **kwargs: Any) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    assert _run(tmp_path, out, flags) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: cannot create the run folder {out}: Operation not permitted\n"
    )


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_run_folder_that_cannot_be_written_fails_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    flags, starts = MODES[mode]
    monkeypatch.setattr(starts, _never)
    out = tmp_path / "new" / "run"

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr("edgespec.output_paths.tempfile.TemporaryFile", refuse)
    assert _run(tmp_path, out, flags) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: cannot write in the run folder {out}: Read-only file system\n"
    )
    assert not (tmp_path / "new").exists()  # what it made is removed again


def test_a_failed_command_removes_the_folders_it_made_and_keeps_the_others(
    tmp_path: Path,
) -> None:
    (tmp_path / "kept").mkdir()
    out = tmp_path / "kept" / "a" / "b"
    with pytest.raises(UserInputError, match="the run failed"), made_run_folder(out):
        assert out.is_dir()
        raise UserInputError("the run failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]
    assert not any((tmp_path / "kept").iterdir())
    with pytest.raises(UserInputError), made_run_folder(out):
        (out / "notes.txt").write_text("mine")  # something written: nothing is removed
        raise UserInputError("the run failed")
    assert (out / "notes.txt").read_text() == "mine"
    with made_run_folder(out):
        pass
    assert out.is_dir()
