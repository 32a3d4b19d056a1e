"""V5 and V6 on the real pair as claim rows (:mod:`edgespec.reproduce.claims`), built from
the results dict of :func:`edgespec.reproduce.wisv.real_pair.report.run_all` alone (no models).

V5 (Fig. 3; the paper's accuracy → our agreement with the target-only answer): threshold 0
is lossless; T < 9 ≈ target-only; agreement falls as T grows, more on the poor channel;
the drop at the paper's chosen T = 12 on each channel; AAL rises and rounds fall with T,
AAL higher on the poor channel than on the good one (never lower, higher at one T at
least), and the AAL gain at T = 12 against Table I's. V6 (Figs. 6–7): WISV's latency per
committed token below greedy SD's at every window, the gap growing with the window, the
answers' agreement over the link, and FH chosen by the handshake RTT (> 10 ms, by
construction on our fixed RTT).

Tolerances: an agreement "≈" or "drop" claim holds within 1 point (Fig. 3's "< 1 %"); a
curve's shape may go against its direction between neighbouring thresholds by one answer
(1/N of N prompts) for agreement and by 5 % for AAL and rounds, and must end on the
claimed side of where it started; the AAL gain at T = 12 is compared within ±50 % of
Table I's; V6's answers hold within 1.3 points of target-only (the Qwen pair's drop).
"""

from __future__ import annotations

from typing import Any

from edgespec.reproduce.claims import ClaimRow, change, pct, within
from edgespec.reproduce.wisv.real_pair.link_claims import v6_reductions, v6_rows
from edgespec.reproduce.wisv.real_pair.verdicts import (
    AAL_GAIN_TOLERANCE,
    AGREEMENT_TOLERANCE,
    CHANNEL_WORDS,
    PAPER_AAL_GAIN,
    PAPER_ROUNDS,
    SHAPE_SLACK,
    TARGET_ONLY,
    answer_slack,
    channel_reason,
    channels_of,
    chosen_threshold,
    curve,
    drop_tolerance,
    falls,
    gain_reason,
    length_reason,
    pair_reason,
    path_reason,
    rises,
    show,
    thresholds_of,
    v5_cell,
)

__all__ = ["all_rows", "chosen_threshold", "falls", "rises", "v5_rows", "v6_reductions", "v6_rows"]


def _lossless_row(results: dict[str, Any]) -> ClaimRow:
    n = int(results["v5"]["cells"][0]["prompts"])
    zero = v5_cell(results, 0, channels_of(results)[0])
    return ClaimRow(
        "V5",
        "T = 0 is standard (lossless) SD: agreement with target-only",
        "T 0 = standard SD = " + TARGET_ONLY,
        f"{zero['agreement']:.0%} of {n} answers agree",
        "100% (lossless)",
        None,
        zero["agreement"] == 1.0,
        note=f"{zero['identical']:.0%} token-identical to target-only up to the stop point; "
        "the channel does not enter at T = 0 (one run stands for both)",
    )


def _low_rows(results: dict[str, Any], quick: str) -> list[ClaimRow]:
    """T < 9 ≈ target-only on each channel."""
    low = [t for t in thresholds_of(results) if 0 < t < 9]
    rows = []
    for channel in channels_of(results) if low else []:
        agreements = [(t, float(v5_cell(results, t, channel)["agreement"])) for t in low]
        worst = min(a for _, a in agreements)
        rows.append(ClaimRow(
            "V5", f"T < 9 ≈ target-only, {CHANNEL_WORDS[channel]}", "≈ " + TARGET_ONLY,
            show(agreements, ".0%"), drop_tolerance(results, " at every T < 9"), None,
            1.0 - worst <= AGREEMENT_TOLERANCE, reason=pair_reason(results), quick_run=quick,
        ))  # fmt: skip
    return rows


def _falling_rows(results: dict[str, Any]) -> list[ClaimRow]:
    """Agreement falls as T grows on each channel, and more on the poor one."""
    slack = answer_slack(results)
    rows = []
    for channel in channels_of(results):
        points = curve(results, channel, "agreement")
        rows.append(ClaimRow(
            "V5", f"agreement falls as T grows, {CHANNEL_WORDS[channel]}",
            "flat below 9, ≈ 5% down at 14 (poor), sharp drop above 15", show(points, ".0%"),
            f"lower at the largest T than at 0; no rise above one answer ({slack:.0%})",
            falls([v for _, v in points], slack, relative=False), None,
            reason=path_reason(results, channel, points, slack),
        ))  # fmt: skip
    middle = [t for t in thresholds_of(results) if 0 < t < 16]
    if len(channels_of(results)) == 2 and middle:
        gaps = [
            (t, float(v5_cell(results, t, "good")["agreement"])
             - float(v5_cell(results, t, "poor")["agreement"]))
            for t in middle
        ]  # fmt: skip
        rows.append(ClaimRow(
            "V5", "the poor channel loses more agreement than the good one (0 < T < 16)",
            "at 12: 79.6% poor vs 82.8% good",
            "good − poor: " + ", ".join(f"T{t} {g * 100:+.0f} pt" for t, g in gaps),
            "good ≥ poor at every 0 < T < 16, good > poor at one at least",
            all(g >= 0 for _, g in gaps) and any(g > 0 for _, g in gaps), None,
            reason=channel_reason(results, middle),
        ))  # fmt: skip
    return rows


def _drop_rows(results: dict[str, Any], quick: str) -> list[ClaimRow]:
    """The drop at the paper's chosen T = 12 on each channel."""
    if 12 not in thresholds_of(results):
        return []
    paper12 = {"poor": "79.6% (−0.8 pt, < 1%)", "good": "82.8% (+2.4 pt)"}
    chosen = chosen_threshold(results)
    rows = []
    for channel in channels_of(results):
        cell = v5_cell(results, 12, channel)
        drop = 1.0 - float(cell["agreement"])
        notes = ["agreement cannot exceed 100%: the stand-in cannot show a gain"] * (
            channel == "good"
        )
        if chosen is not None:
            notes.append(f"the largest T whose drop is ≤ 1 pt on both channels: {chosen}")
        rows.append(ClaimRow(
            "V5", f"drop at the chosen T = 12, {CHANNEL_WORDS[channel]}", paper12[channel],
            f"{cell['agreement']:.0%} agree (drop {drop * 100:.1f} pt)", drop_tolerance(results),
            None,
            drop <= AGREEMENT_TOLERANCE, note="; ".join(notes), reason=pair_reason(results),
            quick_run=quick,
        ))  # fmt: skip
    return rows


def _aal_rows(results: dict[str, Any], channel: str, quick: str) -> list[ClaimRow]:
    """AAL rises and rounds fall with T on ``channel``; the AAL gain at T = 12."""
    aal = curve(results, channel, "aal")
    rounds = curve(results, channel, "rounds")
    before, after = PAPER_ROUNDS[channel]
    rows = [
        ClaimRow(
            "V5", f"AAL (committed per round) rises with T, {CHANNEL_WORDS[channel]}",
            "Table I (window 10): 6.607 at T 0 → "
            f"{7.805 if channel == 'poor' else 7.478} at T 12",
            show(aal, ".2f"), "higher at the largest T than at 0; no step down by more than 5%",
            rises([v for _, v in aal], SHAPE_SLACK, relative=True), None,
        ),
        ClaimRow(
            "V5", f"rounds per answer fall with T, {CHANNEL_WORDS[channel]}",
            f"Table I (window 10): {before} at T 0 → {after} at T 12", show(rounds, ".1f"),
            "lower at the largest T than at 0; no step up by more than 5%",
            falls([v for _, v in rounds], SHAPE_SLACK, relative=True), None,
            note="answers' lengths change with T too (tokens per answer in the V5 table)",
            reason=length_reason(results, channel),
        ),
    ]  # fmt: skip
    if 12 in thresholds_of(results):
        gain = change(float(v5_cell(results, 12, channel)["aal"]), float(aal[0][1]))
        paper = PAPER_AAL_GAIN[channel]
        window = int(results["v5"]["window"])
        rows.append(ClaimRow(
            "V5", f"AAL gain at T = 12 over T = 0, {CHANNEL_WORDS[channel]}",
            f"{pct(paper)} (Table I, window 10)", f"{pct(gain)} (window {window})",
            "within ±50% of the paper's gain", gain is not None and gain > 0,
            gain is not None and within(gain, paper, AAL_GAIN_TOLERANCE),
            reason=gain_reason(gain, paper, aal[0][1], window), quick_run=quick,
        ))  # fmt: skip
    return rows


def _poor_aal_row(results: dict[str, Any]) -> list[ClaimRow]:
    middle = [t for t in thresholds_of(results) if 0 < t < 16]
    if len(channels_of(results)) != 2 or not middle:
        return []
    diffs = [
        (t, float(v5_cell(results, t, "poor")["aal"]) - float(v5_cell(results, t, "good")["aal"]))
        for t in middle
    ]
    return [ClaimRow(
        "V5", "AAL on the poor channel above the good one's at the same T (0 < T < 16)",
        "Table I: 20 Mbps > 500 Mbps at every window (7.805 vs 7.478 at 10)",
        "poor − good: " + ", ".join(f"T{t} {d:+.2f}" for t, d in diffs),
        "poor ≥ good at every 0 < T < 16, poor > good at one at least",
        all(d >= 0 for _, d in diffs) and any(d > 0 for _, d in diffs), None,
        reason=channel_reason(results, middle),
    )]  # fmt: skip


def v5_rows(results: dict[str, Any], quick: str = "") -> list[ClaimRow]:
    """V5's rows (module docstring); ``quick``: what a quick run shortened."""
    aal = [row for c in channels_of(results) for row in _aal_rows(results, c, quick)]
    return [
        _lossless_row(results),
        *_low_rows(results, quick),
        *_falling_rows(results),
        *_drop_rows(results, quick),
        *aal,
        *_poor_aal_row(results),
    ]


def all_rows(results: dict[str, Any], quick: str = "") -> list[ClaimRow]:
    return [*v5_rows(results, quick), *v6_rows(results, quick)]
