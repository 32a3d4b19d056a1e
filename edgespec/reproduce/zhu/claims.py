"""Claims Z1–Z5 of Zhu et al. (SEED-NOTES §5) as report rows, from the draws' latencies
(Z1 in :mod:`fig6_claims`, Z4 in :mod:`bandwidth`, the causes and why some rows hold by
construction in :mod:`causes`, the verdicts the formula or a chosen input decides in
:mod:`decided`, the medians in :mod:`stats`, what a quick run leaves out in
:mod:`coverage`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from edgespec.reproduce.claims import ClaimRow, Reason, pct, within
from edgespec.reproduce.zhu.bandwidth import z4_rows
from edgespec.reproduce.zhu.causes import (
    ADS_SHORT,
    BY_CONSTRUCTION_BAND,
    ordering_reason,
    printed_costs_reason,
)
from edgespec.reproduce.zhu.coverage import Coverage, coverage, points_text, values_text
from edgespec.reproduce.zhu.decided import (
    ads_points_decided,
    ads_points_setting,
    fig7_ordered,
    ordering_reading_decides,
    static_size_decides,
    tie_by_construction,
    tied_points,
)
from edgespec.reproduce.zhu.fig6_claims import direction_row, z1_rows
from edgespec.reproduce.zhu.runs import ZhuPlan, sweep_key
from edgespec.reproduce.zhu.setup import PAIRS, ZhuSetup
from edgespec.reproduce.zhu.stats import ONE_DRAW, median, reduction

Draws = Sequence[Mapping[str, float]]


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
    ties = tied_points(draws, points)
    judged = [p for p in points if p not in ties]
    failing = [p for p in judged if not fig7_ordered(draws, p)]
    why = ordering_reason(draws, failing)
    row = points_row(
        "Z2",
        "Fig. 7: proposed < SD w/o pipeline < FSL, No batching at every point",
        failing,
        why,
        cov,
    )
    decides = ordering_reading_decides(draws, judged, "" if why is None else why.line)
    if decides:
        row = replace(row, setting=decides)
    if ties:  # judged where the pipeline can gain; the ties shown in a row of their own
        row = replace(row, tolerance=f"{row.tolerance}; not at {', '.join(ties)}: by "
                      "construction, the next row")  # fmt: skip
    if len(ties) < len(points):  # a statement over no point is not judged
        rows.append(row)
    if ties:
        rows.append(ClaimRow(
            "Z2", "Fig. 7: proposed < SD w/o pipeline where the DP's plan is one batch",
            "lower", "equal at " + ", ".join(ties), "direction", False, None,
            by_construction=tie_by_construction(draws, ties),
        ))  # fmt: skip
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
        replace(
            direction_row(
                "Z3", "Fig. 8a: Static batching worst at the largest K", "worst", static_worst
            ),
            tolerance="direction, at every Static batch size from 1 task to the SBS memory's cap",
            setting=static_size_decides(draws, largest, others, setup.static_batch_size),
        )
    )
    rows += _below_ads_rows(draws, cov)
    return rows


def _below_ads_rows(draws: Draws, cov: Coverage) -> list[ClaimRow]:
    """Fig. 8's "proposed below ADS at every point", judged at the points where the
    verdict is the same at every ADS batch size; where ADS's batch limit (chosen, not
    given) decides it, a setting row of its own."""
    points = _sweep_names(draws)
    decided = ads_points_decided(draws, points)
    judged = [p for p in points if p not in decided]
    above = [
        p for p in judged if median(draws, f"sweep/{p}/proposed") >= median(draws, f"sweep/{p}/ads")
    ]
    what = "Fig. 8: proposed below ADS at every point"
    rows = []
    if judged:
        row = points_row("Z3", what, above, None, cov)
        if decided:
            row = replace(row, tolerance=f"{row.tolerance}; not at {', '.join(decided)}: "
                          "ADS's batch limit decides it, the next row")  # fmt: skip
        rows.append(row)
    if decided:
        below = [
            p
            for p in decided
            if median(draws, f"sweep/{p}/proposed") < median(draws, f"sweep/{p}/ads")
        ]
        ours = f"below at {len(below)} of {len(decided)} at the chosen limit"
        rows.append(ClaimRow(
            "Z3", "Fig. 8: proposed below ADS, where ADS's batch limit decides it",
            "every point", ours,
            "direction", len(below) == len(decided), None,
            reason=ADS_SHORT, setting=ads_points_setting(draws, decided),
        ))  # fmt: skip
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
        direction_row(
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
