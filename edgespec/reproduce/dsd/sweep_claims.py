"""DSD's fleet-sweep claims D6 (JSQ vs round-robin routing, Figs. 7–8) and D7 (FIFO vs LAB
batching, Figs. 9–10) as :class:`ClaimRow` s over the number of drafts; the other claims and
the tolerances' convention are in :mod:`edgespec.reproduce.dsd.claims`, which also uses the
cause and the quick-run marking stated here (docs/REPRODUCE.md, "Why the misses").
"""

from __future__ import annotations

from edgespec.reproduce.claims import Cause, ClaimRow, Reason, change, fmt, pct
from edgespec.reproduce.dsd.runs import (
    DsdPlan,
    DsdResults,
    batching_name,
    routing_name,
    summary_metric,
)

NEVER_SATURATE = Reason(
    Cause.MISSING_INPUT,
    "the arrival rate: at the chosen 0.043 requests/s per draft the targets never saturate "
    "(2,000 drafts offer 86 requests/s, 20 targets complete 79), so throughput follows the "
    "offered load, JSQ stays only slightly ahead of round-robin and there is no ceiling",
)
LAB_WAITS = Reason(
    Cause.MISSING_INPUT,
    "the arrival rate: at the chosen rate the targets never saturate and FIFO's batches are "
    "small anyway, so LAB, which groups requests within 1.5× of the head-of-line request's "
    "length and waits for them, only delays some rounds",
)


def quick_run(res: DsdResults) -> str:
    """What ``res``'s plan shortens against :meth:`DsdPlan.full` that every throughput and
    latency depends on (the run length); empty for the full plan."""
    run, full = res.plan.setup.duration_s, DsdPlan.full().setup.duration_s
    if run >= full:
        return ""
    return (
        f"{run:g} s runs (full: {full:g} s): a GSM8K request takes ≈7 s, so few finish and "
        "the run's start weighs on every mean"
    )


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
    return [
        ClaimRow(
            "D6", "RR TPOT − JSQ TPOT below 1k drafts (ms)", "+5 to +20 ms",
            ", ".join(fmt(d, "+.1f") for d in below) or "n/a",
            "JSQ lower below 1k; each within 5–20 ms ±50%", ahead_low,
            ahead_low and all(2.5 <= d <= 30.0 for d in below),
            f"by drafts: {detail}", NEVER_SATURATE, quick_run(res),
        ),
        ClaimRow(
            "D6", "drafts where RR catches up with JSQ (TPOT)", "≈ 1,000",
            "not reached" if crossing is None else f"{crossing}",
            "within ±25% of 1,000", crossing is not None,
            crossing is not None and 750 <= crossing <= 1250,
            reason=NEVER_SATURATE, quick_run=quick_run(res),
        ),
    ]  # fmt: skip


def batching_rows(res: DsdResults) -> list[ClaimRow]:
    """D7: Figs. 9–10, FIFO vs LAB over the number of drafts (GSM8K, 10 ms)."""
    drafts = sorted(res.plan.sweep_drafts)
    cuts, thr = [], []
    for n in drafts:
        fifo, lab = res.get(batching_name("fcfs", n)), res.get(batching_name("lab", n))
        f_tpot, l_tpot = summary_metric(fifo, "tpot"), summary_metric(lab, "tpot")
        cuts.append(None if f_tpot is None or l_tpot is None else l_tpot - f_tpot)
        thr.append(change(summary_metric(lab, "thr"), summary_metric(fifo, "thr")))
    detail = "; ".join(f"{n}: {fmt(c, '+.2f')} ms" for n, c in zip(drafts, cuts, strict=True))
    lower = all(c is not None and c <= 0 for c in cuts)
    top = thr[-1]
    return [
        ClaimRow(
            "D7", "LAB TPOT − FIFO TPOT", "−1 to −2 ms",
            ", ".join(fmt(c, "+.2f") for c in cuts), "≤ 0 at every draft count; −0.5 to −3 ms",
            lower, lower and all(c is not None and -3.0 <= c <= -0.5 for c in cuts),
            f"by drafts: {detail}", LAB_WAITS, quick_run(res),
        ),
        ClaimRow(
            "D7", f"LAB vs FIFO throughput at {drafts[-1]} drafts (saturated)", "equal",
            pct(top), "within ±5%", None, top is not None and abs(top) <= 0.05,
            quick_run=quick_run(res),
        ),
    ]  # fmt: skip
