"""The reproductions' files are written whole or not at all: a disk that fills while a
report, a scenario or a plot is written leaves the old file as it was and no temporary
file beside it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from edgespec.reproduce.jobs import write_scenario
from edgespec.reproduce.report_file import write_report
from tests.disk_full import NEEDS_PROC_FD, disk_full_writing
from tests.metrics.test_atomic_writes import half_then_full

pytestmark = NEEDS_PROC_FD

OLD = "the earlier run's file\n"


def test_a_report_that_fails_midway_leaves_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "REPORT.md"
    path.write_text(OLD)
    disk_full_writing(monkeypatch, "REPORT.md")
    with pytest.raises(OSError, match="No space left on device") as caught:
        write_report(path, "T", "cmd", [], [("seed", "fixed")], [])
    assert caught.value.filename == str(path)
    assert [p.name for p in tmp_path.iterdir()] == ["REPORT.md"]
    assert path.read_text() == OLD


def test_the_appendix_follows_the_report_in_the_same_write(tmp_path: Path) -> None:
    write_report(tmp_path / "a.md", "T", "cmd", [], [("seed", "fixed")], ["x.yaml"])
    appendix = "\n## The decision head's reject shares\n\n| a | b |\n"
    write_report(tmp_path / "b.md", "T", "cmd", [], [("seed", "fixed")], ["x.yaml"],
                 appendix=appendix)  # fmt: skip
    assert (tmp_path / "b.md").read_text() == (tmp_path / "a.md").read_text() + appendix


def test_a_scenario_that_fails_midway_leaves_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "w1.yaml").write_text(OLD)
    disk_full_writing(monkeypatch, "w1.yaml")
    with pytest.raises(OSError, match="No space left on device"):
        write_scenario(folder, "w1", {"name": "w1", "seed": 0})
    assert [p.name for p in folder.iterdir()] == ["w1.yaml"]
    assert (folder / "w1.yaml").read_text() == OLD


def _dsd_crossover(path: Path) -> None:
    from edgespec.reproduce.dsd.plots import plot_crossover
    from edgespec.reproduce.dsd.runs import DsdPlan, DsdResults

    plot_crossover(path, DsdResults(DsdPlan.quick(), {}))  # no runs: NaN points


def _wisp_curves(path: Path) -> None:
    from edgespec.reproduce.wisp.plots import plot_violation_curves

    results: Any = SimpleNamespace(curves={})  # the one field the plot reads
    plot_violation_curves(path, results)


@pytest.mark.parametrize("plot", [_dsd_crossover, _wisp_curves])
def test_a_plot_that_fails_midway_leaves_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plot: Any
) -> None:
    from matplotlib.figure import Figure

    path = tmp_path / "fig.png"
    path.write_bytes(b"the earlier run's plot")
    monkeypatch.setattr(Figure, "savefig", lambda self, target, **kw: half_then_full(target))
    with pytest.raises(OSError, match="No space left on device"):
        plot(path)
    assert [p.name for p in tmp_path.iterdir()] == ["fig.png"]
    assert path.read_bytes() == b"the earlier run's plot"
