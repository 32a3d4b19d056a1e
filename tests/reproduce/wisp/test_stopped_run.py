"""A stopped ``edgespec reproduce wisp`` leaves nothing a rerun to the same ``--out``
refuses: Ctrl-C (or an error) anywhere before REPORT.md, in the simulations or after them,
removes the files it wrote and the folders it made (a quick run left its 22 scenario files,
then results.json and scenarios/, and the rerun was refused as "already holds a run"); each
stage after the simulations is named as it starts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import edgespec.reproduce.report_file as report_file
import edgespec.reproduce.wisp.plots as wisp_plots
import edgespec.reproduce.wisp.predictor as wisp_predictor
import edgespec.reproduce.wisp.report as wisp_report
import edgespec.reproduce.wisp.runs as wisp_runs
import edgespec.reproduce.wisp.table6 as table6
from edgespec.reproduce.command import run_folder
from edgespec.reproduce.jobs import write_scenario
from edgespec.reproduce.wisp.report import reproduce
from edgespec.reproduce.wisp.runner import LateSensitivity
from edgespec.reproduce.wisp.unfinished import UnfinishedSensitivity
from tests.reproduce.wisp.results import results as wisp_results


def _no_sensitivity(*args: object, **kwargs: object) -> LateSensitivity:
    return LateSensitivity(1, 20.0, 0.05, {"first": 1, "utility": 1, "last": 1})


def _no_unfinished(*args: object, **kwargs: object) -> UnfinishedSensitivity:
    return UnfinishedSensitivity(1, 20.0, 0.05, 1, 1)


def _stop_in_the_runs(monkeypatch: pytest.MonkeyPatch, out: Path, stop: BaseException) -> list[int]:
    """``stop`` raised as the runs start; returns how many scenario files were written
    then (one entry)."""
    written: list[int] = []

    def run_all(*args: object) -> object:
        written.append(len(list((out / "scenarios").glob("*.yaml"))))
        raise stop

    monkeypatch.setattr(wisp_runs, "late_rule_sensitivity", _no_sensitivity)  # seconds
    monkeypatch.setattr(wisp_runs, "unfinished_sensitivity", _no_unfinished)
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


def _runs_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulations as if run: one scenario file written, hand-built results."""

    def run_wisp(plan: object, executor: object, folder: Path, progress: bool) -> object:
        return wisp_results(), [write_scenario(folder, "curve-wisp-60", {"name": "x"})]

    monkeypatch.setattr(wisp_runs, "run_wisp", run_wisp)


def _stop(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


def test_a_run_stopped_after_the_simulations_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stop after the simulations (`23/23` in --quick) but before REPORT.md left
    results.json and scenarios/ behind; nothing rebuilds WISP's rows from them, and the rerun
    was refused ("already holds a run"). The whole run up to REPORT.md is one unit."""
    out = tmp_path / "run"
    _runs_done(monkeypatch)
    monkeypatch.setattr(wisp_predictor, "run_study", _stop)  # the predictor study's stage
    with pytest.raises(KeyboardInterrupt):
        _run(out)()
    assert list(tmp_path.iterdir()) == []
    assert run_folder("wisp", out, overwrite=False) == out  # the rerun is not refused


def test_a_run_stopped_as_its_report_is_written_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every later stage's files (predictor.json, the profile, the plots) go too: a stop at
    the last step, REPORT.md itself, leaves no half folder."""
    out = tmp_path / "run"
    _runs_done(monkeypatch)

    def after(out: Path, *args: object) -> wisp_report.Written:
        (out / "profiles").mkdir()
        (out / "profiles" / "edge-table6.yaml").write_text("x\n")
        (out / "predictor.json").write_text("{}\n")
        return wisp_report.Written([], ["profiles/edge-table6.yaml"], (), "")

    def plot(path: Path, res: object) -> None:
        path.write_bytes(b"png")

    monkeypatch.setattr(wisp_report, "_after_the_runs", after)
    monkeypatch.setattr(wisp_plots, "plot_violation_curves", plot)
    monkeypatch.setattr(wisp_plots, "plot_capacities", plot)
    held: list[str] = []

    def stop(*args: object, **kwargs: object) -> None:
        held.extend(sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()))
        raise KeyboardInterrupt

    monkeypatch.setattr(report_file, "write_report", stop)
    with pytest.raises(KeyboardInterrupt):
        _run(out)()
    assert held == [
        "fig7_violation_curves.png", "predictor.json", "profiles/edge-table6.yaml",
        "results.json", "scenarios/curve-wisp-60.yaml", "table2_capacities.png",
    ]  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_each_stage_after_the_simulations_says_so_as_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After the simulations' bar, minutes passed in silence (quick ~50 s, full ~4 min):
    each later stage is named as it starts (a line each here, stderr not a terminal), and
    nothing with --quiet."""
    _runs_done(monkeypatch)
    monkeypatch.setattr(wisp_predictor, "run_study", lambda *args: None)
    monkeypatch.setattr(wisp_predictor, "stand_in", lambda study: None)
    monkeypatch.setattr(wisp_predictor, "acceptance_row", lambda *args: None)
    monkeypatch.setattr(table6, "run_table6", _stop)
    with pytest.raises(KeyboardInterrupt):
        reproduce(tmp_path / "a", quick=True, workers=1, progress=True, command="test")
    lines = [line.rsplit(" (", 1)[0] for line in capsys.readouterr().err.splitlines()]
    assert lines == [
        "reproduce wisp: predictor study (W6, Theorem 1, W10): 0/1",
        "reproduce wisp: predictor study (W6, Theorem 1, W10): 1/1",
        "reproduce wisp: W7's acceptance runs: 0/1",
        "reproduce wisp: W7's acceptance runs: 1/1",
        "reproduce wisp: W8's runs (Table 6): 0/1",
    ]
    with pytest.raises(KeyboardInterrupt):
        reproduce(tmp_path / "b", quick=True, workers=1, progress=False, command="test")
    assert capsys.readouterr().err == ""
