"""DSD's fleet-sweep claims D6 (JSQ vs round-robin routing, Figs. 7–8) and D7 (FIFO vs LAB
batching, Figs. 9–10) as :class:`ClaimRow` s over the number of drafts; the other claims and
the tolerances' convention are in :mod:`edgespec.reproduce.dsd.claims`, which also uses the
quick-run marking stated here; the causes are :mod:`edgespec.reproduce.dsd.causes`'.
"""

from __future__ import annotations

import math
from dataclasses import replace

from edgespec.reproduce.claims import ClaimRow, change, fmt, pct
from edgespec.reproduce.dsd.causes import CAUSES, UNSATURATED, catch_up_reason, tagged
from edgespec.reproduce.dsd.runs import (
    DsdPlan,
    DsdResults,
    batching_name,
    lab_bound_name,
    routing_name,
)
from edgespec.reproduce.dsd.summary import summary_metric

SATURATED = 0.1
"""Targets count as saturated when the two largest draft counts' throughputs are within
10% of each other (more drafts, no more throughput)."""


def quick_run(res: DsdResults) -> str:
    """What ``res``'s plan shortens that every throughput and latency depends on
    (:func:`shortened`); empty for the full plan."""
    return shortened(res.plan)


def shortened(plan: DsdPlan) -> str:
    """What ``plan``'s runs shorten against :meth:`DsdPlan.full`'s (the run length, the
    fleet); empty for the full plan."""
    setup, full = plan.setup, DsdPlan.full().setup
    if setup.duration_s >= full.duration_s and setup.fleet_share >= full.fleet_share:
        return ""
    return (
        f"{setup.duration_s:g} s runs on {setup.fleet_share:.0%} of the fleet (full: "
        f"{full.duration_s:g} s, all of it): a closed-loop cycle (think time and "
        "conversation) takes ≈23 s, so few finish and the run's start weighs on every mean"
    )


def not_comparable(row: ClaimRow, res: DsdResults) -> ClaimRow:
    """``row`` of a run that ends inside the start-up transient (shorter than
    :attr:`DsdPlan.transient_s`): neither its direction nor its magnitude is judged, its
    outcome is "not comparable (quick run)", its numbers stay shown. A row that judges
    nothing in any run (a sensitivity) is left as it is."""
    if row.direction_ok is None and row.magnitude_ok is None:
        return row
    why = (
        f"{res.plan.setup.duration_s:g} s runs end inside the start-up transient "
        f"({res.plan.transient_s:.0f} s: three closed-loop cycles); the direction is not "
        "judged either"
    )
    judged = row.magnitude_ok if row.magnitude_ok is not None else row.direction_ok
    return replace(
        row,
        direction_ok=None,
        magnitude_ok=False if judged is None else judged,
        quick_run=f"{quick_run(res) or why}; {why}" if quick_run(res) else why,
    )


def in_run(row: ClaimRow, res: DsdResults) -> ClaimRow:
    """``row`` as ``res``'s plan judges it: as built where its runs pass the start-up
    transient, else :func:`not_comparable`."""
    return row if res.plan.past_transient else not_comparable(row, res)


def routing_rows(res: DsdResults) -> list[ClaimRow]:
    """D6: Figs. 7–8, JSQ vs round-robin over the number of drafts (GSM8K, 10 ms)."""
    drafts = sorted(res.plan.sweep_drafts)
    diff = []
    for n in drafts:
        jsq = summary_metric(res.get(routing_name("jsq", n)), "tpot")
        rr = summary_metric(res.get(routing_name("round_robin", n)), "tpot")
        diff.append(None if jsq is None or rr is None else rr - jsq)
    detail = "; ".join(f"{n}: {fmt(d, '+.1f')}" for n, d in zip(drafts, diff, strict=True))
    below = [d for n, d in zip(drafts, diff, strict=True) if n < 1000 and d is not None]
    ahead_low = bool(below) and all(d > 0 for d in below)
    crossing = next(
        (n for n, d in zip(drafts, diff, strict=True) if d is not None and d <= 0), None
    )
    known = [(n, d) for n, d in zip(drafts, diff, strict=True) if d is not None]
    jsq_thr = [summary_metric(res.get(routing_name("jsq", n)), "thr") for n in drafts[-2:]]
    growth = change(jsq_thr[-1], jsq_thr[0]) if len(drafts) > 1 else None
    top = None if growth is None else (drafts[-2], drafts[-1], growth)
    return [
        ClaimRow(
            "D6", tagged(res.cost_mode, "RR TPOT − JSQ TPOT below 1k drafts (ms)"),
            "+5 to +20 ms",
            ", ".join(fmt(d, "+.1f") for d in below) or "n/a",
            "JSQ lower below 1k; each within 5–20 ms ±50%", ahead_low,
            ahead_low and all(2.5 <= d <= 30.0 for d in below),
            f"by drafts: {detail}", CAUSES[res.cost_mode].routing, quick_run(res),
        ),
        ClaimRow(
            "D6", tagged(res.cost_mode, "drafts where RR catches up with JSQ (TPOT)"), "≈ 1,000",
            "not reached" if crossing is None else f"{crossing}",
            "within ±25% of 1,000", crossing is not None,
            crossing is not None and 750 <= crossing <= 1250,
            reason=catch_up_reason(known, top), quick_run=quick_run(res),
        ),
    ]  # fmt: skip


def padded(res: DsdResults) -> bool:
    """Whether the runs price target batches padded (``DsdSetup.batch_pricing``, the
    setting); under summed pricing LAB has no padding to save."""
    return res.plan.setup.batch_pricing == "padded"


def _lab_cuts(res: DsdResults, bound: float | None) -> list[float | None]:
    """LAB's TPOT minus FIFO's (ms) at each swept draft count, LAB under the length bound
    ``bound`` (the setting's: D7's own LAB runs; another: the bound sweep's)."""
    cuts = []
    for n in sorted(res.plan.sweep_drafts):
        own = bound == res.plan.setup.lab_max_length_ratio
        lab = batching_name("lab", n) if own else lab_bound_name(bound, n)
        fifo = summary_metric(res.get(batching_name("fcfs", n)), "tpot")
        ours = summary_metric(res.get(lab), "tpot")
        cuts.append(None if fifo is None or ours is None else ours - fifo)
    return cuts


def bound_sweep(res: DsdResults) -> str:
    """LAB's TPOT minus FIFO's at each swept draft count for every length bound of the
    plan and the setting's (ms; ``none``: no bound), the setting's marked."""
    setting = res.plan.setup.lab_max_length_ratio
    bounds = sorted({setting, *res.plan.lab_bounds}, key=lambda b: math.inf if b is None else b)
    parts = []
    for bound in bounds:
        label = "none" if bound is None else f"{bound:g}×"
        mark = " (the setting)" if bound == setting else ""
        parts.append(f"{label}{mark}: " + ", ".join(fmt(c, "+.2f") for c in _lab_cuts(res, bound)))
    return "; ".join(parts)


def batching_rows(res: DsdResults) -> list[ClaimRow]:
    """D7: Figs. 9–10, FIFO vs LAB over the number of drafts (GSM8K, 10 ms). Under padded
    batches (``DsdSetup.batch_pricing``) LAB's TPOT row is judged and shows the bound sweep
    beside it; under summed pricing it is unreachable by construction, not judged."""
    drafts = sorted(res.plan.sweep_drafts)
    cuts = _lab_cuts(res, res.plan.setup.lab_max_length_ratio)
    detail = "; ".join(f"{n}: {fmt(c, '+.2f')} ms" for n, c in zip(drafts, cuts, strict=True))
    lower = all(c is not None and c <= 0 for c in cuts)
    why, mode = CAUSES[res.cost_mode].batching, res.cost_mode
    if padded(res):
        tpot_row = ClaimRow(
            "D7", tagged(mode, "LAB TPOT − FIFO TPOT"),
            "−1 to −2 ms", ", ".join(fmt(c, "+.2f") for c in cuts),
            "≤ 0 at every draft count; −0.5 to −3 ms", lower,
            lower and all(c is not None and -3.0 <= c <= -0.5 for c in cuts),
            f"by drafts: {detail}; LAB's length bound swept (LAB − FIFO TPOT, ms, by "
            f"drafts): {bound_sweep(res)}",
            why, quick_run(res),
        )  # fmt: skip
    else:
        tpot_row = ClaimRow(
            "D7", tagged(mode, "LAB TPOT − FIFO TPOT"), "−1 to −2 ms",
            ", ".join(fmt(c, "+.2f") for c in cuts), "≤ 0 at every draft count; −0.5 to −3 ms",
            None, None,
            f"not judged: unreachable by construction — summed batch pricing charges a batch "
            f"its summed tokens, so LAB has no padding to save (LAB lower at every count: "
            f"{'yes' if lower else 'no'}); by drafts: {detail}",
            why, quick_run(res),
        )  # fmt: skip
    return [tpot_row, _saturated_row(res, drafts)]


def _saturated_row(res: DsdResults, drafts: list[int]) -> ClaimRow:
    """D7's equal throughput at the largest draft count, judged where the targets are
    saturated (FIFO throughput grows at most :data:`SATURATED` between the two largest
    counts): saturation is the claim's setting, so elsewhere it is not reached (as W4's
    operating point), not a verdict."""
    top = change(
        summary_metric(res.get(batching_name("lab", drafts[-1])), "thr"),
        summary_metric(res.get(batching_name("fcfs", drafts[-1])), "thr"),
    )
    fifo_thr = [summary_metric(res.get(batching_name("fcfs", n)), "thr") for n in drafts]
    growth = change(fifo_thr[-1], fifo_thr[-2]) if len(drafts) > 1 else None
    saturated = growth is not None and growth <= SATURATED + 1e-12  # change() rounds
    before = drafts[-2] if len(drafts) > 1 else "-"
    grew = (f"grows {pct(growth)} from {before} to {drafts[-1]} drafts" if growth is not None
            else "cannot show it (one draft count, or a FIFO run missing)")  # fmt: skip
    unreached = "" if saturated or quick_run(res) else (
        f"the targets are not saturated: FIFO throughput {grew}")  # fmt: skip
    return ClaimRow(
        "D7", tagged(res.cost_mode, f"LAB vs FIFO throughput at {drafts[-1]} drafts (saturated)"),
        "equal", pct(top),
        f"targets saturated (FIFO throughput grows ≤ {SATURATED:.0%} from "
        f"{before} to {drafts[-1]} drafts); within ±5%",
        None, top is not None and abs(top) <= 0.05,
        "FIFO throughput by drafts: "
        + ", ".join(f"{n}: {fmt(t, '.2f')}" for n, t in zip(drafts, fifo_thr, strict=True)),
        UNSATURATED if not saturated else CAUSES[res.cost_mode].batching, quick_run(res),
        unreached=unreached,
    )  # fmt: skip
