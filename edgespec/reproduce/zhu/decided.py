"""Verdicts that something other than the system's behaviour decides, found by computing
it, never by naming a point: Fig. 7's points where the pipeline ties SD w/o pipeline by the
formula (shown as by construction, not judged), and the rows where a baseline's input we
chose (ADS's batch limit, Static batching's size) decides the verdict, which are judged
only where the verdict is the same over that input's whole range and are settings
elsewhere."""

from __future__ import annotations

from collections.abc import Sequence

from edgespec.reproduce.zhu.runs import AT_O_MAX, FASTEST, FIG7_SCHEMES, ONE_BATCH_TIE, SLOWEST
from edgespec.reproduce.zhu.stats import Draws, median


def tied_points(draws: Draws, points: Sequence[str]) -> list[str]:
    """The sweep points of ``points`` where the pipeline cannot gain by the formula: in every
    draw the proposed plan and SD w/o pipeline's are one and the same plan of one batch
    (``one_batch_tie``, :func:`~edgespec.reproduce.zhu.latencies.one_batch_tie`), so the two
    latencies are the same sum. A point where some draw's plans differ, or batch more than
    once, is not one of them, however close its latencies."""
    return [p for p in points if all(d[f"sweep/{p}/{ONE_BATCH_TIE}"] == 1.0 for d in draws)]


def tie_by_construction(draws: Draws, ties: Sequence[str]) -> str:
    """Why Fig. 7's strict ordering is not judged at ``ties`` (:func:`tied_points`), with
    each point's median latency: it cannot hold there by the formula."""
    shown = "; ".join(
        f"{p}: {median(draws, f'sweep/{p}/proposed'):.1f} s in both (median)" for p in ties
    )
    return (
        f"in all {len(draws)} draw(s) the DP's plan is one batch and SD w/o pipeline plans the "
        "same batch: with one batch Eq. 21's pipelined step is the sequential sum (no other "
        "batch to overlap), so proposed = SD w/o pipeline by the formula and the paper's "
        f"strict “<” cannot hold there, though Fig. 7 draws it lower ({shown})"
    )


def size_decides(ours: float, fastest: float, slowest: float) -> bool:
    """Whether a baseline's chosen batch size decides if ``ours`` lies below it: not where
    ``ours`` is below the baseline even at its fastest size, or not below it even at its
    slowest (the same verdict at every size)."""
    return not (ours < fastest or ours >= slowest)


def ads_size_decides(draws: Draws, pair: str, alphas: Sequence[float]) -> str:
    """Why ADS's batch size, whose limit the paper does not give, decides Fig. 6's verdict
    for ``pair`` (a setting, not judged); empty where the verdict is the same at every size
    from 1 task to K: the pipeline below ADS at its fastest size at every α (it holds at any
    size), or not below ADS at its slowest size at some α (it fails at any size)."""

    def med(alpha: float, scheme: str) -> float:
        return median(draws, f"fig6/{pair}/alpha={alpha}/{scheme}")

    prop = [med(a, "proposed") for a in alphas]
    fastest = [med(a, "ads" + FASTEST) for a in alphas]
    slowest = [med(a, "ads" + SLOWEST) for a in alphas]
    if all(p < f for p, f in zip(prop, fastest, strict=True)):
        return ""
    if any(p >= s for p, s in zip(prop, slowest, strict=True)):
        return ""
    shown = "; ".join(
        f"α = {a:g}: SD {p:.1f} s, ADS {f:.1f}–{s:.1f} s"
        for a, p, f, s in zip(alphas, prop, fastest, slowest, strict=True)
    )
    return (
        "ADS's batch limit, an input the paper does not give, decides the verdict: over "
        "batch sizes from 1 task to K (medians, the fastest size's to the slowest's) ADS at "
        "its fastest lies below the pipeline at some α, at its slowest above it at every α "
        f"({shown}); the chosen limit, the MBS memory's (Eqs. 9–10, 24 GB), puts it above"
    )


def ads_points_decided(draws: Draws, points: Sequence[str]) -> list[str]:
    """The sweep points of ``points`` where ADS's batch size decides whether the proposed
    plan lies below it (:func:`size_decides` on the medians)."""
    return [
        p
        for p in points
        if size_decides(*(median(draws, f"sweep/{p}/{s}") for s in ADS_OVER_SIZES))
    ]


ADS_OVER_SIZES = ("proposed", "ads" + FASTEST, "ads" + SLOWEST)
"""The proposed plan's latency, then ADS's at its fastest and its slowest batch size."""


def ads_points_setting(draws: Draws, points: Sequence[str]) -> str:
    """Why Fig. 8's "proposed below ADS" is a setting at ``points``
    (:func:`ads_points_decided`), with the medians' ranges over them."""

    def span(scheme: str) -> str:
        values = [median(draws, f"sweep/{p}/{scheme}") for p in points]
        return f"{min(values):.1f}–{max(values):.1f} s"

    return (
        "ADS's batch limit, an input the paper does not give, decides the verdict at each of "
        f"these {len(points)} point(s): over batch sizes from 1 task to K, ADS's median "
        "latency at its fastest size lies below the proposed plan's, at its slowest above it "
        f"(proposed {span('proposed')}; ADS at its fastest size {span('ads' + FASTEST)}, at "
        f"its slowest {span('ads' + SLOWEST)}; at the chosen limit, the MBS memory's, "
        f"{span('ads')})"
    )


def static_size_decides(draws: Draws, point: str, others: Sequence[str], chosen: int) -> str:
    """Why Static batching's size, which the paper does not give, decides whether it is the
    worst of ``others`` at sweep ``point`` (a setting, not judged; ``chosen``: the size
    run); empty where the verdict is
    the same at every size from 1 task to the SBS memory's cap: worst even at its fastest
    size, or not worst even at its slowest."""
    rivals = max(median(draws, f"sweep/{point}/{s}") for s in others)
    fastest = median(draws, f"sweep/{point}/static_batching{FASTEST}")
    slowest = median(draws, f"sweep/{point}/static_batching{SLOWEST}")
    if not size_decides(rivals, fastest, slowest):
        return ""
    at = median(draws, f"sweep/{point}/static_batching")
    return (
        "Static batching's size, an input the paper does not give, decides the verdict: over "
        "the sizes from 1 task a batch to the SBS memory's cap its median latency spans "
        f"{fastest:.1f}–{slowest:.1f} s, across the slowest other scheme's {rivals:.1f} s; "
        f"the chosen {chosen} tasks a batch give {at:.1f} s"
    )


def fig7_ordered(draws: Draws, point: str, suffix: str = "") -> bool:
    """Fig. 7's ordering at ``point`` (proposed < SD w/o pipeline < FSL, No batching),
    strict as the paper states it, on the median latencies; ``suffix`` :data:`AT_O_MAX`:
    with O_max as every task's output."""
    m = [median(draws, f"sweep/{point}/{scheme}{suffix}") for scheme in FIG7_SCHEMES]
    return m[0] < m[1] < min(m[2], m[3])


def ordering_reading_decides(draws: Draws, points: Sequence[str], why: str) -> str:
    """Why the reading of the output lengths a latency is taken over (not given, SEED-NOTES
    §2.5, 3) decides Fig. 7's ordering at ``points`` (a setting, not judged): it holds at
    every one under one reading and not under the other (``why``: where each task's own O_k,
    the chosen reading, fails, :func:`~.causes.ordering_reason`'s medians of both); empty
    where both readings give the same verdict."""
    if any(f"sweep/{p}/{s}{AT_O_MAX}" not in draws[0] for p in points for s in FIG7_SCHEMES):
        return ""  # the other reading not run
    own = all(fig7_ordered(draws, p) for p in points)
    longest = [p for p in points if not fig7_ordered(draws, p, AT_O_MAX)]
    if own == bool(longest):
        return f"the reading decides it, O_max holding at every point: {why}" if not own else (
            "the reading of the output lengths a latency is taken over decides it (not given, "
            "SEED-NOTES §2.5, 3): with each task's own O_k (chosen, Eq. 8) the ordering holds "
            "at every point, with O_max as every task's (as Algorithm 1 plans) not at "
            + ", ".join(longest))  # fmt: skip
    return ""
