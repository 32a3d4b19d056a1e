"""Claims Z1–Z5 of Zhu et al. (SEED-NOTES §5) as report rows, from the draws' latencies
(Z4 in :mod:`bandwidth`, the causes and why some rows hold by construction in :mod:`causes`,
the medians in :mod:`stats`, what a quick run leaves out in :mod:`coverage`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from edgespec.reproduce.claims import ClaimRow, Reason, fmt, pct, within
from edgespec.reproduce.zhu.bandwidth import z4_rows
from edgespec.reproduce.zhu.causes import (
    ADS_LIMIT,
    ADS_SHORT,
    BY_CONSTRUCTION_BAND,
    BY_CONSTRUCTION_GAP,
    BY_CONSTRUCTION_HIGHEST,
    ordering_reason,
    printed_costs_reason,
)
from edgespec.reproduce.zhu.coverage import Coverage, coverage, points_text, values_text
from edgespec.reproduce.zhu.runs import ZhuPlan, sweep_key
from edgespec.reproduce.zhu.setup import PAIR_NAMES, PAIRS, ZhuSetup
from edgespec.reproduce.zhu.stats import ONE_DRAW, median, reduction

Draws = Sequence[Mapping[str, float]]
AXES_S = {"68m-7b": 150.0, "1.1b-7b": 250.0, "1.1b-13b": 300.0}
"""Fig. 6's y-axis tops (seconds assumed: the unit is not printed)."""


def _reduction_row(
    claim: str,
    what: str,
    paper: float | tuple[float, ...],
    draws: Draws,
    keys: tuple[str, str],
    quick: str,
    why: Reason | None,
) -> ClaimRow:
    """``paper``: the figure's reduction, or several figures' readings of one point (each
    judged); ``keys``: the baseline's latency and the proposed one's. One draw has no
    spread: the note says so."""
    value, lo, hi, of_means = reduction(draws, *keys)
    spread = ONE_DRAW if len(draws) == 1 else f"{pct(lo)} to {pct(hi)}"
    papers = paper if isinstance(paper, tuple) else (paper,)
    return ClaimRow(
        claim,
        what,
        " / ".join(pct(p) for p in papers),
        pct(value),
        "±25 %" + (" of each" if len(papers) > 1 else ""),
        value > 0,
        all(within(value, p, 0.25) for p in papers),
        note=f"per draw 10–90 %: {spread}; of the mean latencies {pct(of_means)}",
        reason=why,
        quick_run=quick,
    )


def z1_rows(draws: Draws, plan: ZhuPlan, cov: Coverage, quick: str = "") -> list[ClaimRow]:
    """Fig. 6's rows (``quick``: what a quick run shortened that the latencies, and so
    whether they lie inside the axes, depend on; not for a pair whose ADS lies above the
    axis in every draw: the unstated batch limit, not the run length, puts it there)."""
    rows = []
    alphas = plan.alphas
    only = f"; direction at α = {values_text(alphas)} (quick run)" if cov.alphas_left_out else ""
    for pair in PAIRS:
        prop = [median(draws, f"fig6/{pair}/alpha={a}/proposed") for a in alphas]
        ads = [median(draws, f"fig6/{pair}/alpha={a}/ads") for a in alphas]
        beyond = min(d[f"fig6/{pair}/alpha={a}/ads"] for d in draws for a in alphas) > AXES_S[pair]
        rows.append(
            ClaimRow(
                "Z1",
                f"Fig. 6 {PAIR_NAMES[pair]}: SD pipeline below ADS at every α",
                f"below, axis 0–{AXES_S[pair]:.0f} s",
                f"SD {fmt(min(prop))}–{fmt(max(prop))} s, ADS {fmt(min(ads))} s",
                "inside the axis" + only,
                all(p < a for p, a in zip(prop, ads, strict=True)),
                max(*prop, *ads) <= AXES_S[pair],
                note=f"ADS above the axis in all {len(draws)} draw(s)" if beyond else "",
                reason=ADS_LIMIT,
                quick_run="" if beyond else quick,
            )
        )
    gaps = {
        pair: [
            median(draws, f"fig6/{pair}/alpha={a}/ads")
            - median(draws, f"fig6/{pair}/alpha={a}/proposed")
            for a in alphas
        ]
        for pair in PAIRS
    }
    grows = all(bool(np.all(np.diff(g) > 0)) for g in gaps.values())
    rows.append(
        _direction_row(
            "Z1", "Fig. 6: the gap to ADS grows with α", "grows", grows, BY_CONSTRUCTION_GAP
        )
    )
    highest = all(
        median(draws, f"fig6/1.1b-13b/alpha={a}/proposed")
        > max(median(draws, f"fig6/{p}/alpha={a}/proposed") for p in ("68m-7b", "1.1b-7b"))
        for a in alphas
    )
    rows.append(
        _direction_row(
            "Z1",
            "Fig. 6: (LLaMA-1.1B, LLaMA-13B) highest",
            "highest",
            highest,
            BY_CONSTRUCTION_HIGHEST,
        )
    )
    return rows


def _direction_row(
    claim: str, what: str, paper: str, ok: bool, by_construction: str = ""
) -> ClaimRow:
    return ClaimRow(
        claim,
        what,
        paper,
        "yes" if ok else "no",
        "direction",
        ok,
        None,
        by_construction=by_construction,
    )


def z2_rows(draws: Draws, setup: ZhuSetup, quick: str, cov: Coverage) -> list[ClaimRow]:
    k100 = sweep_key("K", setup.num_users, setup)
    o1792 = sweep_key("O_max", 1792, setup)
    rows = [
        _reduction_row(  # one point of both figures: Fig. 7a's K and Fig. 7b's I_max
            "Z2",
            f"Fig. 7a / 7b: vs SD w/o pipeline at K = {setup.num_users}, I_max = 512 "
            "(the same point in both figures)",
            (0.313, 0.316),
            draws,
            (f"sweep/{k100}/no_pipeline", f"sweep/{k100}/proposed"),
            quick,
            None,
        ),
        _reduction_row(
            "Z2",
            "Fig. 7c: vs SD w/o pipeline at O_max = 1792",
            0.307,
            draws,
            (f"sweep/{o1792}/no_pipeline", f"sweep/{o1792}/proposed"),
            quick,
            None,
        ),
    ]
    points = _sweep_names(draws)
    failing = [
        p
        for p in points
        if not median(draws, f"sweep/{p}/proposed")
        < median(draws, f"sweep/{p}/no_pipeline")
        < min(median(draws, f"sweep/{p}/fsl"), median(draws, f"sweep/{p}/no_batching"))
    ]
    rows.append(
        points_row(
            "Z2",
            "Fig. 7: proposed < SD w/o pipeline < FSL, No batching at every point",
            failing,
            ordering_reason(draws, failing),
            cov,
        )
    )
    return rows


def points_row(
    claim: str, what: str, failing: Sequence[str], why: Reason | None, cov: Coverage
) -> ClaimRow:
    """A statement over every sweep point; ``ours`` names the points where it fails. A plan
    that leaves sweep points out says it judged the statement at the points it ran only,
    and names the others."""
    left_out = cov.points_left_out
    every = f"at the {len(cov.points)} points run" if left_out else "at every point"
    ours = every if not failing else "not at " + ", ".join(failing)
    tolerance = "direction"
    if left_out:
        tolerance += f", at the points run only (not run: {points_text(left_out)})"
    return ClaimRow(claim, what, "every point", ours, tolerance, not failing, None, reason=why)


def _sweep_names(draws: Draws) -> list[str]:
    return sorted({k.split("/")[1] for k in draws[0] if k.startswith("sweep/")})


def z3_rows(
    draws: Draws, setup: ZhuSetup, plan: ZhuPlan, quick: str, cov: Coverage
) -> list[ClaimRow]:
    k90 = sweep_key("K", 90, setup)
    i1792 = sweep_key("I_max", 1792, setup)
    o1024 = sweep_key("O_max", 1024, setup)
    rows = [
        _reduction_row(
            "Z3",
            "Fig. 8a: DP vs Max batching at K = 90",
            0.214,
            draws,
            (f"sweep/{k90}/max_batching", f"sweep/{k90}/proposed"),
            quick,
            printed_costs_reason(setup, "max_batching"),
        ),
        _reduction_row(
            "Z3",
            "Fig. 8b: DP vs Heuristic batching at I_max = 1792",
            0.196,
            draws,
            (f"sweep/{i1792}/heuristic_batching", f"sweep/{i1792}/proposed"),
            quick,
            printed_costs_reason(setup, "heuristic_batching"),
        ),
        _reduction_row(
            "Z3",
            "Fig. 8c: DP vs Heuristic batching at O_max = 1024",
            0.205,
            draws,
            (f"sweep/{o1024}/heuristic_batching", f"sweep/{o1024}/proposed"),
            quick,
            printed_costs_reason(setup, "heuristic_batching"),
        ),
    ]
    largest = sweep_key("K", max(plan.num_users), setup)
    others = ("proposed", "max_batching", "heuristic_batching")
    static_worst = median(draws, f"sweep/{largest}/static_batching") > max(
        median(draws, f"sweep/{largest}/{s}") for s in others
    )
    rows.append(
        _direction_row(
            "Z3", "Fig. 8a: Static batching worst at the largest K", "worst", static_worst
        )
    )
    above = [
        p
        for p in _sweep_names(draws)
        if median(draws, f"sweep/{p}/proposed") >= median(draws, f"sweep/{p}/ads")
    ]
    rows.append(
        points_row("Z3", "Fig. 8: proposed below ADS at every point", above, ADS_SHORT, cov)
    )
    return rows


def z5_rows(draws: Draws, setup: ZhuSetup, plan: ZhuPlan) -> list[ClaimRow]:
    ks = np.array(plan.num_users, dtype=float)
    lat = np.array(
        [median(draws, f"sweep/{sweep_key('K', k, setup)}/proposed") for k in plan.num_users]
    )
    slope, intercept = np.polyfit(ks, lat, 1)
    fitted = slope * ks + intercept
    r2 = 1.0 - float(np.sum((lat - fitted) ** 2) / np.sum((lat - lat.mean()) ** 2))
    rising = bool(np.all(np.diff(lat) > 0))
    falls = all(
        bool(
            np.all(
                np.diff([median(draws, f"fig9/{p}/band={b}/optimal") for b in plan.bandwidths_mhz])
                < 0
            )
        )
        for p in PAIRS
    )
    return [
        ClaimRow(
            "Z5",
            "Fig. 7a: latency ≈ linear in K",
            "≈ linear (no number)",
            ("rises" if rising else "does not rise")
            + f" at every K run ({values_text(plan.num_users)}); R² = {r2:.3f} of a straight line",
            "direction: rises with K (SEED-NOTES' check: the trend); R² shown, not judged "
            "(the paper gives no number for “≈ linear”, so no threshold has a source)",
            rising,
            None,
        ),
        _direction_row(
            "Z5",
            "Fig. 9: latency falls as B_w grows (every pair)",
            "falls",
            falls,
            BY_CONSTRUCTION_BAND,
        ),
    ]


def all_rows(draws: Draws, setup: ZhuSetup, plan: ZhuPlan, quick: bool) -> list[ClaimRow]:
    why = f"{plan.draws} Monte-Carlo draw(s) instead of {ZhuPlan.full().draws}" if quick else ""
    cov = coverage(setup, plan)
    return [
        *z1_rows(draws, plan, cov, why),
        *z2_rows(draws, setup, why, cov),
        *z3_rows(draws, setup, plan, why, cov),
        *z4_rows(draws, setup, why),
        *z5_rows(draws, setup, plan),
    ]
