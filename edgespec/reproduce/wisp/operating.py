"""W4's operating point and knees: where a violation curve crosses a level, interpolated.

The curves are sampled on a device grid (every 20 devices in the full run). A level is
reached between two grid points; linear interpolation between them says where, and the
operating point is then probed there (a few runs, each narrowing the bracket), so that
FCFS's 4 tok/s violation rate at the chosen N is Table 1's 36.45%, not whatever a grid
point gives.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from edgespec.metrics.types import SystemMetrics
from edgespec.sweeps.capacity import class_violation

FCFS_OPERATING_LEVEL = 0.3645
"""Table 1: FCFS's violation rate at 4 tok/s; W4 compares WISP and FCFS where ours has it."""
OPERATING_CLASS = "c4"
LEVEL_TOLERANCE = 0.02
"""Probing stops once FCFS's rate is within 2 points of the level ("≈ 36%")."""
MAX_PROBES = 4
"""FCFS runs off the grid at most (the full run's; ``--quick`` spends one)."""

Point = tuple[int, float]
"""(devices, violation rate)."""


def crossing(points: Iterable[Point], level: float) -> tuple[Point, Point] | None:
    """The first two neighbouring points (by devices) whose rate goes from below ``level``
    to ``level`` or above; ``None`` where none does."""
    for a, b in itertools.pairwise(sorted(points)):
        if a[1] < level <= b[1]:
            return a, b
    return None


def interpolate(a: Point, b: Point, level: float) -> float:
    """Devices at which the straight line through ``a`` and ``b`` reaches ``level``."""
    (n0, r0), (n1, r1) = a, b
    return n0 + (level - r0) * (n1 - n0) / (r1 - r0)


def knee(points: Iterable[Point], level: float) -> float | None:
    """Where the rate first reaches ``level``: the first point if it is there already,
    else interpolated between the points around the first crossing; ``None`` when the
    rate never reaches it."""
    ordered = sorted(points)
    if ordered and ordered[0][1] >= level:
        return float(ordered[0][0])
    hit = crossing(ordered, level)
    return None if hit is None else interpolate(*hit, level)


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """W4's N: ``devices``, FCFS's metrics there, and every (N, rate) looked at."""

    devices: int
    fcfs: SystemMetrics
    points: tuple[Point, ...]
    probed: tuple[int, ...]
    """The device counts run off the grid to find it."""

    @property
    def fcfs_rate(self) -> float:
        return class_violation(OPERATING_CLASS)(self.fcfs)

    @property
    def gap(self) -> float:
        """How far FCFS's rate at ``devices`` is from :data:`FCFS_OPERATING_LEVEL`."""
        return abs(self.fcfs_rate - FCFS_OPERATING_LEVEL)

    @property
    def reached(self) -> bool:
        """FCFS's rate at ``devices`` is within :data:`LEVEL_TOLERANCE` of the level (the
        probes ran out, or the bracket closed, before it came nearer: not reached)."""
        return self.gap <= LEVEL_TOLERANCE

    def unreached(self) -> str:
        """Why a row judged at ``devices`` is not comparable with Table 1 (empty where the
        level is reached)."""
        if self.reached:
            return ""
        level, tolerance = 100 * FCFS_OPERATING_LEVEL, 100 * LEVEL_TOLERANCE
        return (
            f"Table 1's operating point not reached: FCFS {100 * self.fcfs_rate:.1f}% at "
            f"N = {self.devices}, {100 * self.gap:.1f} points from {level:.2f}% "
            f"(tolerance {tolerance:g})"
        )


def find_operating_point(
    grid: dict[int, SystemMetrics],
    probe: Callable[[int], SystemMetrics],
    max_probes: int = MAX_PROBES,
) -> OperatingPoint | None:
    """Where FCFS's 4 tok/s violation rate is :data:`FCFS_OPERATING_LEVEL`: interpolate
    between the grid points around the crossing, run ``probe`` there, and repeat in the
    narrowed bracket until a rate is within :data:`LEVEL_TOLERANCE` of the level, the
    bracket is one device wide, or ``max_probes`` runs are spent. The N whose rate is
    nearest the level wins (the fewest devices on a tie); ``None`` when the grid never
    crosses the level."""
    runs = dict(grid)
    rate = {n: class_violation(OPERATING_CLASS)(m) for n, m in runs.items()}
    probed = []
    for _ in range(max_probes):
        hit = crossing(rate.items(), FCFS_OPERATING_LEVEL)
        if hit is None:
            break
        (n0, r0), (n1, r1) = hit
        near = min(abs(r0 - FCFS_OPERATING_LEVEL), abs(r1 - FCFS_OPERATING_LEVEL))
        if n1 - n0 <= 1 or near <= LEVEL_TOLERANCE:
            break
        n = min(max(round(interpolate(*hit, FCFS_OPERATING_LEVEL)), n0 + 1), n1 - 1)
        runs[n] = probe(n)
        rate[n] = class_violation(OPERATING_CLASS)(runs[n])
        probed.append(n)
    if crossing(rate.items(), FCFS_OPERATING_LEVEL) is None:
        return None
    best = min(rate, key=lambda n: (abs(rate[n] - FCFS_OPERATING_LEVEL), n))
    return OperatingPoint(best, runs[best], tuple(sorted(rate.items())), tuple(probed))
