"""W4's operating point and knees (edgespec/reproduce/wisp/operating.py) on hand-built
curves: the crossing, the interpolation, the probes and the N kept."""

from __future__ import annotations

import dataclasses

from edgespec.metrics import SystemMetrics, summarize
from edgespec.metrics.types import SloClassStats
from edgespec.reproduce.wisp.operating import crossing, find_operating_point, interpolate, knee


def test_crossing_is_the_first_rise_through_the_level() -> None:
    points = [(180, 0.9), (60, 0.0), (120, 0.3), (240, 0.2), (300, 0.5)]
    assert crossing(points, 0.3645) == ((120, 0.3), (180, 0.9))
    assert crossing(points, 0.3) == ((60, 0.0), (120, 0.3))  # reaching it counts
    assert crossing(points, 0.95) is None
    assert crossing([], 0.5) is None


def test_interpolate_and_knee() -> None:
    assert interpolate((120, 0.3), (180, 0.9), 0.6) == 150.0
    assert interpolate((60, 0.0), (120, 0.1), 0.05) == 90.0
    assert knee([(60, 0.0), (120, 0.1)], 0.05) == 90.0
    assert knee([(60, 0.05), (120, 0.1)], 0.05) == 60.0  # already there at the first point
    assert knee([(60, 0.0), (120, 0.04)], 0.05) is None  # never reached
    assert knee([], 0.05) is None


def _metrics(rate: float) -> SystemMetrics:
    """Metrics whose 4 tok/s class violates at ``rate`` (1,000 requests)."""
    met = round(1000 * (1 - rate))
    stats = SloClassStats("c4", 4.0, 1000, 1000, met, met / 1000)
    return dataclasses.replace(summarize([], [], 1.0, 1), slo_classes=(stats,))


def test_the_operating_point_is_probed_where_the_line_crosses() -> None:
    grid = {n: _metrics(r) for n, r in ((100, 0.1), (120, 0.2), (140, 0.8))}
    probes: list[int] = []

    def probe(n: int) -> SystemMetrics:  # the true curve: +3 points per device above 120
        probes.append(n)
        return _metrics(0.2 + 0.03 * (n - 120))

    point = find_operating_point(grid, probe)
    assert point is not None
    # 120 + (0.3645 - 0.2) / 0.6 · 20 = 125.48 → 125 (rate 0.35, within 2 points): stop
    assert probes == [125] and point.probed == (125,)
    assert (point.devices, point.fcfs_rate) == (125, 0.35)
    assert point.points == ((100, 0.1), (120, 0.2), (125, 0.35), (140, 0.8))


def test_probing_narrows_the_bracket_until_spent() -> None:
    grid = {100: _metrics(0.0), 200: _metrics(1.0)}
    rates = {136: 0.1, 155: 0.9, 142: 0.3, 143: 0.5}
    point = find_operating_point(grid, lambda n: _metrics(rates[n]))
    # 136.45 → 136 (0.1); 136 + 0.2645 / 0.9 · 64 = 154.8 → 155 (0.9);
    # 136 + 0.2645 / 0.8 · 19 = 142.3 → 142 (0.3); 142 + 0.0645 / 0.6 · 13 = 143.4 → 143
    assert point is not None and point.probed == (136, 155, 142, 143)
    assert point.devices == 142  # 0.3 is nearer 0.3645 than 0.5
    once = find_operating_point(grid, lambda n: _metrics(rates[n]), max_probes=1)
    assert once is not None and (once.probed, once.devices) == ((136,), 136)


def test_no_crossing_no_operating_point() -> None:
    grid = {100: _metrics(0.1), 200: _metrics(0.3)}
    assert find_operating_point(grid, lambda n: _metrics(0.0)) is None
    # a bracket one device wide is not probed
    point = find_operating_point({100: _metrics(0.0), 101: _metrics(1.0)}, lambda n: _metrics(0))
    assert point is not None and (point.probed, point.devices) == ((), 100)
