"""DSD, Zhu and WISV write results.json as soon as their runs finish, before their rows and
plots: a step that fails after the runs (a plot path it cannot write, a row that raises)
keeps them (the full DSD run takes 55 min; docs/REPRODUCE.md rebuilds the rows from
results.json). Before, DSD built rows and drew plots first, and Zhu and WISV built rows
first: such a failure lost every run. WISP, whose rows need its predictor study and
estimator besides the runs, is one unit up to REPORT.md
(tests/reproduce/wisp/test_stopped_run.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import edgespec.reproduce.dsd.claims as dsd_claims
import edgespec.reproduce.dsd.plots as dsd_plots
import edgespec.reproduce.dsd.runs as dsd_runs
import edgespec.reproduce.wisv.claims as wisv_claims
import edgespec.reproduce.zhu.claims as zhu_claims
import edgespec.sim.model.reject_table as semantic
from edgespec.reproduce.command import Reproduce
from edgespec.reproduce.dsd.report import reproduce as reproduce_dsd
from edgespec.reproduce.dsd.runs import DsdPlan, results_from_dict
from edgespec.reproduce.wisv.report import reproduce as reproduce_wisv
from edgespec.reproduce.zhu.report import reproduce as reproduce_zhu
from edgespec.reproduce.zhu.runs import ZhuPlan
from tests.reproduce.wisv.test_runs import write_tables

FULL_DSD = Path(__file__).parents[2] / "benchmarks" / "results" / "reproduce-dsd-full.json"


def _fail(what: str) -> Callable[..., None]:
    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(21, "Is a directory", what)

    return fail


def _run(reproduce: Reproduce, out: Path) -> None:
    with pytest.raises(OSError, match="Is a directory"):
        reproduce(out, quick=True, workers=1, progress=False, command="test")


def test_dsd_keeps_its_runs_when_a_plot_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full run's results (benchmarks/results), as if just run; the first plot fails."""
    results = results_from_dict(json.loads(FULL_DSD.read_text()), DsdPlan.full())
    monkeypatch.setattr(dsd_runs, "run_dsd", lambda *args: (results, []))
    monkeypatch.setattr(dsd_plots, "plot_dsd", _fail("physical-fig5_stacks.png"))
    _run(reproduce_dsd, tmp_path)
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["reproduction"] == "dsd"
    assert results_from_dict(written, DsdPlan.full()) == results  # the rows rebuild from it
    assert not (tmp_path / "REPORT.md").exists()


def test_dsd_keeps_its_runs_when_a_row_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = results_from_dict(json.loads(FULL_DSD.read_text()), DsdPlan.full())
    monkeypatch.setattr(dsd_runs, "run_dsd", lambda *args: (results, []))
    monkeypatch.setattr(dsd_claims, "all_rows", _fail("rows"))
    _run(reproduce_dsd, tmp_path)
    assert results_from_dict(json.loads((tmp_path / "results.json").read_text()), DsdPlan.full())


def test_zhu_keeps_its_draws_when_a_row_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import edgespec.reproduce.jobs as reproduce_jobs

    # the draws' values are not what is checked (tests/reproduce/zhu/test_runs.py runs them)
    monkeypatch.setattr(reproduce_jobs, "run_all", lambda executor, jobs, advance: [
        {"job": i} for i in range(len(jobs))])  # fmt: skip
    monkeypatch.setattr(zhu_claims, "all_rows", _fail("rows"))
    _run(reproduce_zhu, tmp_path)
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["reproduction"] == "zhu" and len(written["draws"]) == ZhuPlan.quick().draws


def test_wisv_keeps_its_runs_when_a_row_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tables(tmp_path / "tables")
    monkeypatch.setattr(semantic, "tables_dir", lambda: tmp_path / "tables")
    monkeypatch.setattr(wisv_claims, "all_rows", _fail("rows"))
    _run(reproduce_wisv, tmp_path / "out")
    written = json.loads((tmp_path / "out" / "results.json").read_text())
    assert written["reproduction"] == "wisv" and written["runs"]
