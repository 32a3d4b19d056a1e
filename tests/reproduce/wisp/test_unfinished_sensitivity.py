"""WISP's capacity with the unfinished requests counted, a sensitivity: its REPORT.md line
(the run's: tests/reproduce/wisp/test_runs.py)."""

from __future__ import annotations

from edgespec.reproduce.wisp.unfinished import UnfinishedSensitivity


def test_the_report_line() -> None:
    line = UnfinishedSensitivity(1, 20.0, 0.05, 68, None).line()
    assert line == (
        "**unfinished requests** (chosen: Eq. 20 counts finished requests only): WISP's "
        "capacity (ε = 5% over all classes pooled, late-request rule “first”) with devices of "
        "mixed classes, seed 1, 20 s runs: 68 devices counting finished requests (as every "
        "claim), 0 with the unfinished ones already sure to miss counted as misses."
    )
