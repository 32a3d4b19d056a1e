"""What a plan leaves out of the full Zhu reproduction: the α of Fig. 6, the sweep points of
Figs. 7–8 and the bandwidths of Fig. 9 that ``--quick`` does not run, and the draws it
shortens. The rows that claim something "at every α" or "at every point" say over which ones
they judged it, and the quick REPORT.md lists what it left out (:func:`left_out`), read off
the two plans."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from edgespec.reproduce.left_out import cut, not_run, numbers
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


def _not_run(setup: ZhuSetup, plan: ZhuPlan) -> list[str]:
    """The α, sweep points and bandwidths of the full plan that ``plan`` does not run."""
    cov, out = coverage(setup, plan), []
    if cov.alphas_left_out:
        left, kept = numbers(cov.alphas_left_out), numbers(plan.alphas)
        about = "Fig. 6; its rows at every α judged without them"
        out.append(not_run("Z1 at α =", left, f"α = {kept}", about))
    if cov.points_left_out:
        left, kept = points_text(cov.points_left_out), points_text(cov.points)
        about = "Figs. 7–8; the rows at every point judged without them"
        out.append(not_run("Z2, Z3, Z5 at", left, kept, about))
    if cov.bands_left_out_mhz:
        kept = numbers(plan.bandwidths_mhz, "MHz")
        out.append(not_run("Z5 at B =", numbers(cov.bands_left_out_mhz, "MHz"), kept, "Fig. 9"))
    return out


def left_out(setup: ZhuSetup, plan: ZhuPlan) -> list[str]:
    """Everything ``plan`` leaves out of :meth:`ZhuPlan.full`, the values not run first,
    then the draws it shortens, each beside the full value; empty for the full plan."""
    full = ZhuPlan.full()
    pairs = [
        ("every claim (Z1–Z5):", plan.draws, full.draws, "Monte-Carlo draw"),
        ("Algorithm 1 against exhaustive search:", plan.exhaustive_draws,
         full.exhaustive_draws, "draw"),
        ("Algorithm 1 against exhaustive search: on", plan.exhaustive_users,
         full.exhaustive_users, "user"),
        ("the plan as events:", plan.event_draws, full.event_draws, "draw"),
    ]  # fmt: skip
    return _not_run(setup, plan) + [cut(*pair) for pair in pairs if pair[1] != pair[2]]
