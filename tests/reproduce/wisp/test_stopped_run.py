"""A stopped ``edgespec reproduce wisp`` leaves nothing a rerun to the same ``--out``
refuses: Ctrl-C (or an error) after the scenario files are written, before results.json,
removes them and the folders it made (a quick run left its 22 scenario files, and the
rerun was refused as "already holds a run")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import edgespec.reproduce.wisp.runs as wisp_runs
from edgespec.reproduce.command import run_folder
from edgespec.reproduce.wisp.report import reproduce
from edgespec.reproduce.wisp.runner import LateSensitivity


def _no_sensitivity(*args: object, **kwargs: object) -> LateSensitivity:
    return LateSensitivity(1, 20.0, 0.05, {"first": 1, "utility": 1, "last": 1})


def _stop_in_the_runs(monkeypatch: pytest.MonkeyPatch, out: Path, stop: BaseException) -> list[int]:
    """``stop`` raised as the runs start; returns how many scenario files were written
    then (one entry)."""
    written: list[int] = []

    def run_all(*args: object) -> object:
        written.append(len(list((out / "scenarios").glob("*.yaml"))))
        raise stop

    monkeypatch.setattr(wisp_runs, "late_rule_sensitivity", _no_sensitivity)  # seconds
    monkeypatch.setattr(wisp_runs, "run_all", run_all)
    return written


def _run(out: Path) -> Callable[[], object]:
    return lambda: reproduce(out, quick=True, workers=1, progress=False, command="test")


def test_a_run_stopped_before_results_json_removes_its_files_and_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "new" / "run"
    written = _stop_in_the_runs(monkeypatch, out, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        _run(out)()
    assert written == [22]  # the quick run's scenario files were there
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
        _run(out)()
    assert written == [22]
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "notes.txt",
        "scenarios",
        "scenarios/keep.txt",
    ]
    assert run_folder("wisp", out, overwrite=False) == out  # the rerun is not refused
