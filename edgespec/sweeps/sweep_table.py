"""What ``edgespec sim --sweep`` prints on stdout once its points are done: a sweep of up to
:data:`MAX_POINT_ROWS` points, one row per point (:func:`~edgespec.metrics.summary.print_runs`,
as a capacity search's probes); a larger one, one table of the whole sweep, a row per
metric (and per SLO class's attainment) with its least, median and greatest value over the
points and the points where the least and greatest are (their swept values), so that a
2,000-point sweep prints a screen, not 4,000 lines. Every point's row is in the sweep's
``sweep.csv``."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from edgespec.metrics.formatting import fixed, percent, plain, setting
from edgespec.metrics.summary import classes_by_target, print_runs
from edgespec.metrics.types import SystemMetrics
from edgespec.sweeps.grid import SweepPoint

if TYPE_CHECKING:
    from rich.console import Console

MAX_POINT_ROWS = 20
"""The most points a sweep prints one row each of; a larger sweep prints its range table."""

RANGE_HEADERS = ("metric", "least", "median", "greatest", "least at", "greatest at")
"""The range table's columns (:func:`range_rows`)."""


@dataclass(frozen=True, slots=True)
class _Metric:
    """One row of the range table: its name, its value in a point's metrics (``None``:
    the point has none), and how a value is shown."""

    name: str
    value_of: Callable[[SystemMetrics], float | None]
    shown: Callable[[float], str]


def _goodput(m: SystemMetrics) -> float | None:
    return m.goodput_tokens_per_s


def _tpot_p50_ms(m: SystemMetrics) -> float | None:
    return None if m.tpot is None else m.tpot.p50_s * 1000


def _attainment_of(slo_class: str) -> Callable[[SystemMetrics], float | None]:
    def attainment(m: SystemMetrics) -> float | None:
        by_class = {c.slo_class: c.attainment for c in m.slo_classes}
        return by_class.get(slo_class)

    return attainment


def _metrics(points: Sequence[SweepPoint]) -> list[_Metric]:
    """The range table's rows: the per-point table's columns, then each SLO class's
    attainment (classes by target token speed, as the per-point class table)."""
    rows = [
        _Metric("goodput tok/s", _goodput, lambda v: plain(round(v))),
        _Metric("TPOT p50 ms", _tpot_p50_ms, lambda v: fixed(v, 1)),
        _Metric("acceptance", lambda m: m.acceptance_rate, percent),
        _Metric("SLO violation", lambda m: m.slo_violation_rate, percent),
        _Metric("server util", lambda m: m.mean_server_utilization, percent),
        _Metric("unfinished", lambda m: m.num_unfinished_requests, lambda v: plain(round(v))),
    ]
    classes = classes_by_target(p.metrics for p in points)
    rows += [_Metric(f"{c} attainment", _attainment_of(c), percent) for c in classes]
    return rows


def _label(point: SweepPoint) -> str:
    """A point as its swept values, in the grid's key order (``3, 4`` for ``seed=3
    gamma=4``), as the per-point table shows them (the table's caption names the keys)."""
    return ", ".join(setting(v) for v in point.overrides.values())


def range_rows(points: Sequence[SweepPoint]) -> list[list[str]]:
    """Per metric: its name, least, median and greatest value over ``points`` (those that
    have it), and the first point at the least and at the greatest; ``-`` where no point
    has it."""
    rows = []
    for metric in _metrics(points):
        found = [(v, p) for p in points if (v := metric.value_of(p.metrics)) is not None]
        if not found:
            rows.append([metric.name, "-", "-", "-", "-", "-"])
            continue
        least = min(found, key=lambda vp: vp[0])
        greatest = max(found, key=lambda vp: vp[0])
        median = statistics.median(v for v, _ in found)
        shown = [metric.shown(least[0]), metric.shown(median), metric.shown(greatest[0])]
        rows.append([metric.name, *shown, _label(least[1]), _label(greatest[1])])
    return rows


def print_sweep(points: Sequence[SweepPoint], console: Console) -> None:
    """A sweep's table (the module docstring): one row per point for up to
    :data:`MAX_POINT_ROWS` points, else the range of each metric over them all."""
    if len(points) <= MAX_POINT_ROWS:
        print_runs([(p.overrides, p.metrics) for p in points], console, "sweep")
        return
    from rich.table import Table
    from rich.text import Text

    title = f"sweep of {plain(len(points))} points (each point's row: sweep.csv)"
    caption = f"at: the point's {', '.join(points[0].overrides)}"
    table = Table(title=title, caption=caption, min_width=len(title) + 4)
    for i, header in enumerate(RANGE_HEADERS):
        table.add_column(Text(header), justify="right" if 0 < i < 4 else "left", overflow="fold")
    for row in range_rows(points):
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
