"""Fig. 6's rows of Zhu et al.'s Z1 (the pipeline against ADS, against the figure's axes
(not judged: it prints no numbers), the gap growing with α, the highest pair) and the
one-verdict row every figure's direction statements use (:func:`direction_row`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgespec.reproduce.claims import ClaimRow, fmt
from edgespec.reproduce.zhu.causes import (
    BY_CONSTRUCTION_GAP,
    BY_CONSTRUCTION_HIGHEST,
)
from edgespec.reproduce.zhu.coverage import Coverage, values_text
from edgespec.reproduce.zhu.decided import ads_size_decides
from edgespec.reproduce.zhu.runs import ZhuPlan
from edgespec.reproduce.zhu.setup import PAIR_NAMES, PAIRS
from edgespec.reproduce.zhu.stats import Draws, median

AXES_S = {"68m-7b": 150.0, "1.1b-7b": 250.0, "1.1b-13b": 300.0}
"""Fig. 6's y-axis tops (seconds assumed: the unit is not printed)."""


def z1_rows(draws: Draws, plan: ZhuPlan, cov: Coverage, quick: str = "") -> list[ClaimRow]:
    """Fig. 6's rows: each pair's pipeline against ADS (:func:`below_ads_row`); the pipeline
    against the figure's axes, not judged (``quick``: what a quick run shortened that the
    latencies depend on); the gap growing with α and the highest pair."""
    alphas = plan.alphas
    only = f"; direction at α = {values_text(alphas)} (quick run)" if cov.alphas_left_out else ""
    rows = [below_ads_row(draws, pair, alphas, only) for pair in PAIRS]
    inside = {pair: max(median(draws, f"fig6/{pair}/alpha={a}/proposed") for a in alphas)
              for pair in PAIRS}  # fmt: skip
    within = all(inside[p] <= AXES_S[p] for p in PAIRS)
    rows.append(  # Fig. 6 prints no numbers: its axes give the scale, no claim to judge
        ClaimRow(
            "Z1",
            "Fig. 6: SD pipeline against the axes (every pair, every α)",
            " / ".join(f"0–{AXES_S[p]:.0f} s" for p in PAIRS),
            "at most " + " / ".join(f"{fmt(inside[p])} s" for p in PAIRS),
            "not judged: the figure prints no numbers, only its axes (seconds assumed)" + only,
            None,
            None,
            note=f"for scale: {'inside' if within else 'beyond'} the axes",
            quick_run=quick,
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
        direction_row(
            "Z1", "Fig. 6: the gap to ADS grows with α", "grows", grows, BY_CONSTRUCTION_GAP
        )
    )
    highest = all(
        median(draws, f"fig6/1.1b-13b/alpha={a}/proposed")
        > max(median(draws, f"fig6/{p}/alpha={a}/proposed") for p in ("68m-7b", "1.1b-7b"))
        for a in alphas
    )
    rows.append(
        direction_row(
            "Z1",
            "Fig. 6: (LLaMA-1.1B, LLaMA-13B) highest",
            "highest",
            highest,
            BY_CONSTRUCTION_HIGHEST,
        )
    )
    return rows


def below_ads_row(draws: Draws, pair: str, alphas: Sequence[float], only: str) -> ClaimRow:
    """``pair``'s pipeline below ADS at every α, judged where the verdict is the same at
    every ADS batch size, else a setting the chosen limit decides
    (:func:`~.decided.ads_size_decides`); ``only``: the α a quick run judges it at."""
    prop = [median(draws, f"fig6/{pair}/alpha={a}/proposed") for a in alphas]
    ads = [median(draws, f"fig6/{pair}/alpha={a}/ads") for a in alphas]
    beyond = min(d[f"fig6/{pair}/alpha={a}/ads"] for d in draws for a in alphas) > AXES_S[pair]
    above = f"ADS above the axis ({AXES_S[pair]:.0f} s) in all {len(draws)} draw(s)"
    return ClaimRow(
        "Z1",
        f"Fig. 6 {PAIR_NAMES[pair]}: SD pipeline below ADS at every α",
        "below",
        f"SD {fmt(min(prop))}–{fmt(max(prop))} s, ADS {fmt(min(ads))} s",
        "direction, at every ADS batch size from 1 task to K" + only,
        all(p < a for p, a in zip(prop, ads, strict=True)),
        None,
        note=above if beyond else "",
        setting=ads_size_decides(draws, pair, alphas),
    )


def direction_row(
    claim: str, what: str, paper: str, ok: bool, by_construction: str = ""
) -> ClaimRow:
    """A statement judged on its direction alone (``by_construction``: why it cannot fail,
    shown and not judged)."""
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
