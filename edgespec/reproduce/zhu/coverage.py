"""What a plan leaves out of the full Zhu reproduction: the α of Fig. 6, the sweep points of
Figs. 7–8 and the bandwidths of Fig. 9 that ``--quick`` does not run. The rows that claim
something "at every α" or "at every point" say over which ones they judged it, and the
quick REPORT.md lists what it left out (:func:`left_out_lines`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from edgespec.reproduce.zhu.runs import ZhuPlan, sweep_points
from edgespec.reproduce.zhu.setup import ZhuSetup


@dataclass(frozen=True, slots=True)
class Coverage:
    """The α, sweep points (``K=…``, ``I_max=…``, ``O_max=…``) and bandwidths a plan runs,
    and those of the full plan it leaves out."""

    alphas: tuple[float, ...]
    alphas_left_out: tuple[float, ...]
    points: tuple[str, ...]
    points_left_out: tuple[str, ...]
    bands_left_out_mhz: tuple[float, ...]

    @property
    def complete(self) -> bool:
        """The plan runs every α, sweep point and bandwidth of the full one."""
        return not (self.alphas_left_out or self.points_left_out or self.bands_left_out_mhz)


def coverage(setup: ZhuSetup, plan: ZhuPlan) -> Coverage:
    full = ZhuPlan.full()
    points = [name for name, _ in sweep_points(setup, plan)]
    full_points = [name for name, _ in sweep_points(setup, full)]
    return Coverage(
        plan.alphas,
        tuple(a for a in full.alphas if a not in plan.alphas),
        tuple(points),
        tuple(p for p in full_points if p not in points),
        tuple(b for b in full.bandwidths_mhz if b not in plan.bandwidths_mhz),
    )


def points_text(names: Sequence[str]) -> str:
    """``K = 20, 30; O_max = 256``: sweep point names grouped by the swept parameter."""
    groups: dict[str, list[str]] = {}
    for name in names:
        param, value = name.split("=")
        groups.setdefault(param, []).append(value)
    return "; ".join(f"{param} = {', '.join(values)}" for param, values in groups.items())


def values_text(values: Sequence[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def left_out_lines(cov: Coverage, also: Sequence[str] = ()) -> list[str]:
    """REPORT.md lines naming what the plan leaves out of the full run, then ``also`` (a
    paragraph each: what else it leaves out); none when it leaves out nothing."""
    if cov.complete and not also:
        return []
    items = [
        ("α (Fig. 6, Z1)", values_text(cov.alphas_left_out)),
        ("sweep points (Figs. 7–8, Z2, Z3, Z5)", points_text(cov.points_left_out)),
        ("bandwidths (Fig. 9, Z5), MHz", values_text(cov.bands_left_out_mhz)),
    ]
    return [
        "## What the quick run leaves out",
        "",
        "The rows that claim a statement at every α or every point judge it only at the "
        "ones this run has; the full run judges it at every one. Not run here:",
        "",
        *[f"- {what}: {values}" for what, values in items if values],
        "",
        *[line for paragraph in also for line in (paragraph, "")],
    ]
