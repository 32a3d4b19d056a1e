"""A stopped ``edgespec reproduce wisv`` leaves nothing a rerun to the same ``--out``
refuses: Ctrl-C (or an error) after the scenario files are written, before results.json,
removes them and the folders it made (it left its scenario files and the rerun was refused
as "already holds a run")."""

from __future__ import annotations

from pathlib import Path

import pytest

import edgespec.reproduce.wisv.runs as wisv_runs
from edgespec.reproduce.command import run_folder
from edgespec.reproduce.wisv.report import reproduce

N_SCENARIOS = 100
"""The scenario files a quick run writes before its runs."""


def _stop_in_the_runs(monkeypatch: pytest.MonkeyPatch, out: Path, stop: BaseException) -> list[int]:
    """``stop`` raised as the runs start; returns how many scenario files were written
    then (one entry)."""
    written: list[int] = []

    def run_all(*args: object) -> object:
        written.append(len(list((out / "scenarios").glob("*.yaml"))))
        raise stop

    monkeypatch.setattr(wisv_runs, "run_all", run_all)
    return written


def test_a_run_stopped_before_results_json_removes_its_files_and_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "new" / "run"
    written = _stop_in_the_runs(monkeypatch, out, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        reproduce(out, quick=True, workers=1, progress=False, command="test")
    assert written == [N_SCENARIOS]  # the quick run's scenario files were there
    assert list(tmp_path.iterdir()) == []  # and are gone, with the folders it made


def test_a_failed_run_keeps_the_files_it_did_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "mine"
    (out / "scenarios").mkdir(parents=True)
    (out / "notes.txt").write_text("mine\n")
    (out / "scenarios" / "keep.txt").write_text("mine\n")
    written = _stop_in_the_runs(monkeypatch, out, RuntimeError("a run failed"))
    with pytest.raises(RuntimeError, match="a run failed"):
        reproduce(out, quick=True, workers=1, progress=False, command="test")
    assert written == [N_SCENARIOS]
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "notes.txt",
        "scenarios",
        "scenarios/keep.txt",
    ]
    assert run_folder("wisv", out, overwrite=False) == out  # the rerun is not refused
