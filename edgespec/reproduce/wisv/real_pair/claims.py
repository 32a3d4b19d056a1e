"""V5 and V6 on the real pair as claim rows (:mod:`edgespec.reproduce.claims`), built from
the results dict of :func:`edgespec.reproduce.wisv.real_pair.report.run_all` alone (no models).

V5 (Fig. 3; the paper's accuracy → our agreement with the target-only answer): threshold 0
is lossless; T < 9 ≈ target-only; agreement falls as T grows, more on the poor channel;
the drop at the paper's chosen T = 12 on each channel; AAL rises and rounds fall with T,
AAL at least as high on the poor channel as on the good one, and the AAL gain at T = 12
against Table I's. V6 (Figs. 6–7): WISV's latency per answer below greedy SD's at every
window, the gap growing with the window, the answers' agreement over the link, and FH
chosen by the handshake RTT (> 10 ms).

Tolerances: an agreement "≈" or "drop" claim holds within 1 point (Fig. 3's "< 1 %"); a
curve's shape may go against its direction between neighbouring thresholds by one answer
(1/N of N prompts) for agreement and by 5 % for AAL and rounds, and must end on the
claimed side of where it started; the AAL gain at T = 12 is compared within ±50 % of
Table I's; V6's answers hold within 1.3 points of target-only (the Qwen pair's drop).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from edgespec.reproduce.claims import Cause, ClaimRow, Reason, change, pct, within

AGREEMENT_TOLERANCE = 0.01
"""An agreement claim holds when the drop from target-only is at most this (1 point)."""
SHAPE_SLACK = 0.05
"""AAL and rounds may step against the claimed direction by this much (relative)."""
TARGET_ONLY = "80.4% (target-only)"
PAPER_AAL_GAIN = {"poor": 7.805 / 6.607 - 1.0, "good": 7.478 / 6.607 - 1.0}
"""Table I, window 10, T = 12: WISV's AAL over greedy SD's (20 and 500 Mbit/s)."""
PAPER_ROUNDS = {"poor": (31.912, 27.144), "good": (31.912, 27.736)}
AAL_GAIN_TOLERANCE = 0.5
"""The AAL gain is compared within ±50 % of the paper's (a different pair and window)."""
PAPER_MAX_REDUCTION = 0.3541
TABLE_I_REDUCTION_16 = 1.0 - 7.317 / 8.842
"""Table I (simulated, 500 Mbit/s, window 16): WISV FH's latency below greedy's."""
CHANNEL_WORDS = {"poor": "poor channel (20 Mbit/s)", "good": "good channel (500 Mbit/s)"}


def _v5(results: dict[str, Any], threshold: int, channel: str) -> dict[str, Any]:
    for cell in results["v5"]["cells"]:
        if cell["threshold"] == threshold and cell["channel"] == channel:
            found: dict[str, Any] = cell
            return found
    raise KeyError(f"no V5 cell for threshold {threshold}, channel {channel}")


def _thresholds(results: dict[str, Any]) -> list[int]:
    return sorted({int(c["threshold"]) for c in results["v5"]["cells"]})


def _channels(results: dict[str, Any]) -> list[str]:
    return [c for c in CHANNEL_WORDS if any(x["channel"] == c for x in results["v5"]["cells"])]


def _slack(results: dict[str, Any]) -> float:
    """One answer's share of the agreement (1/N)."""
    return 1.0 / max(1, int(results["v5"]["cells"][0]["prompts"]))


def _curve(results: dict[str, Any], channel: str, key: str) -> list[tuple[int, float]]:
    return [(t, float(_v5(results, t, channel)[key])) for t in _thresholds(results)]


def _show(curve: Sequence[tuple[int, float]], spec: str) -> str:
    return ", ".join(f"T{t} {format(v, spec)}" for t, v in curve)


def falls(values: Sequence[float], slack: float, relative: bool) -> bool:
    """Ends below its start, no step up by more than ``slack`` (relative to the step's
    start when ``relative``)."""
    if len(values) < 2 or not values[-1] < values[0]:
        return False
    return all(b - a <= (slack * abs(a) if relative else slack) for a, b in pairwise(values))


def rises(values: Sequence[float], slack: float, relative: bool) -> bool:
    """Ends above its start, no step down by more than ``slack``."""
    return falls([-v for v in values], slack, relative)


def _pair_reason(results: dict[str, Any]) -> Reason | None:
    """Why this pair's answers move with T far more than the paper's, from the shipped
    head's held-out reject shares, its training set's critical share and the run's own
    accepted mismatches (``None`` for a run whose results do not carry the head's numbers:
    not the shipped pair)."""
    about = results.get("head", {})
    share = about.get("reject_share")
    critical = about.get("critical_share")
    if not share or critical is None:
        return None
    accepted = ""
    cells = [c for c in results["v5"]["cells"] if c["threshold"] == 12]
    if cells:
        each = " / ".join(f"{c['accepted_mismatches']:.1f} ({c['channel']})" for c in cells)
        accepted = f"; at T = 12 an answer here accepted {each} mismatching draft tokens"
    return Reason(
        Cause.MODELLING,
        "the 270M pair and its head stand in for Llama 1B/8B: the draft often answers with "
        "a bare number where the target writes its working, so most mismatches are "
        f"critical ({critical:.0%} in the head's training set), and the relabelled head "
        "(repair budget B(κ) = κ·n_critical, ours: the paper gives none) still accepts "
        f"many (held-out reject share at T = 4: {share['poor'][4]:.2f} poor / "
        f"{share['good'][4]:.2f} good; at T = 12: {share['poor'][12]:.2f} / "
        f"{share['good'][12]:.2f}){accepted}",
    )


PATH_FLOOR = 0.5
"""Agreement at or below this: most answers already differ from target-only."""


def _path_reason(
    results: dict[str, Any], channel: str, curve: Sequence[tuple[int, float]], slack: float
) -> Reason | None:
    """The known cause of an agreement curve that rises by more than one answer between
    neighbouring thresholds where most answers already differ (≤ 50%): which answers
    match target-only there changes from one T to the next (``None`` otherwise, or when
    the results hold no per-answer runs)."""
    runs = results["v5"].get("runs")
    rises_at = [(a, b) for a, b in pairwise(curve) if b[1] - a[1] > slack]
    if not runs or not rises_at or any(a[1] > PATH_FLOOR for a, _ in rises_at):
        return None

    def agreeing(t: int) -> set[int]:
        # one T = 0 run stands for both channels (recorded under the first)
        return {
            int(r["prompt"])
            for r in runs
            if r["threshold"] == t and r["agrees"] and (t == 0 or r["channel"] == channel)
        }

    steps = "; ".join(
        f"T {a} → {b}: prompts {sorted(agreeing(b) - agreeing(a))} agree at {b}, not at {a}"
        for (a, _), (b, _) in rises_at
    )
    return Reason(
        Cause.MODELLING,
        "one accepted mismatch changes everything decoded after it, and a higher T accepts "
        "more of them, so at agreements this far below target-only which few answers still "
        f"land on the target's number changes from one T to the next ({steps})",
    )


def v5_rows(results: dict[str, Any], quick: str = "") -> list[ClaimRow]:
    """V5's rows (module docstring); ``quick``: what a quick run shortened."""
    rows: list[ClaimRow] = []
    thresholds = _thresholds(results)
    channels = _channels(results)
    slack = _slack(results)
    n = int(results["v5"]["cells"][0]["prompts"])
    zero = _v5(results, 0, channels[0])
    rows.append(
        ClaimRow(
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
    )
    pair = _pair_reason(results)
    low = [t for t in thresholds if 0 < t < 9]
    for channel in channels:
        if not low:
            break
        agreements = [(t, float(_v5(results, t, channel)["agreement"])) for t in low]
        worst = min(a for _, a in agreements)
        rows.append(
            ClaimRow(
                "V5",
                f"T < 9 ≈ target-only, {CHANNEL_WORDS[channel]}",
                "≈ " + TARGET_ONLY,
                _show(agreements, ".0%"),
                "drop ≤ 1 pt at every T < 9",
                None,
                1.0 - worst <= AGREEMENT_TOLERANCE,
                reason=pair,
                quick_run=quick,
            )
        )
    for channel in channels:
        curve = _curve(results, channel, "agreement")
        rows.append(
            ClaimRow(
                "V5",
                f"agreement falls as T grows, {CHANNEL_WORDS[channel]}",
                "flat below 9, ≈ 5% down at 14 (poor), sharp drop above 15",
                _show(curve, ".0%"),
                f"lower at the largest T than at 0; no rise above one answer ({slack:.0%})",
                falls([v for _, v in curve], slack, relative=False),
                None,
                reason=_path_reason(results, channel, curve, slack),
            )
        )
    middle = [t for t in thresholds if 0 < t < 16]
    if len(channels) == 2 and middle:
        gaps = [
            (t, float(_v5(results, t, "good")["agreement"] - _v5(results, t, "poor")["agreement"]))
            for t in middle
        ]
        rows.append(
            ClaimRow(
                "V5",
                "the poor channel loses more agreement than the good one (0 < T < 16)",
                "at 12: 79.6% poor vs 82.8% good",
                "good − poor: " + ", ".join(f"T{t} {g * 100:+.0f} pt" for t, g in gaps),
                "good ≥ poor at every 0 < T < 16",
                all(g >= 0 for _, g in gaps),
                None,
            )
        )
    if 12 in thresholds:
        paper12 = {"poor": "79.6% (−0.8 pt, < 1%)", "good": "82.8% (+2.4 pt)"}
        for channel in channels:
            cell = _v5(results, 12, channel)
            drop = 1.0 - float(cell["agreement"])
            note = "agreement cannot exceed 100%: the stand-in cannot show a gain" * (
                channel == "good"
            )
            chosen = chosen_threshold(results)
            if chosen is not None:
                note = (note + "; " if note else "") + (
                    f"the largest T whose drop is ≤ 1 pt on both channels: {chosen}"
                )
            rows.append(
                ClaimRow(
                    "V5",
                    f"drop at the chosen T = 12, {CHANNEL_WORDS[channel]}",
                    paper12[channel],
                    f"{cell['agreement']:.0%} agree (drop {drop * 100:.1f} pt)",
                    "drop ≤ 1 pt",
                    None,
                    drop <= AGREEMENT_TOLERANCE,
                    note=note,
                    reason=pair,
                    quick_run=quick,
                )
            )
    for channel in channels:
        aal = _curve(results, channel, "aal")
        rounds = _curve(results, channel, "rounds")
        rows.append(
            ClaimRow(
                "V5",
                f"AAL (committed per round) rises with T, {CHANNEL_WORDS[channel]}",
                "Table I (window 10): 6.607 at T 0 → "
                f"{7.805 if channel == 'poor' else 7.478} at T 12",
                _show(aal, ".2f"),
                "higher at the largest T than at 0; no step down by more than 5%",
                rises([v for _, v in aal], SHAPE_SLACK, relative=True),
                None,
            )
        )
        before, after = PAPER_ROUNDS[channel]
        rows.append(
            ClaimRow(
                "V5",
                f"rounds per answer fall with T, {CHANNEL_WORDS[channel]}",
                f"Table I (window 10): {before} at T 0 → {after} at T 12",
                _show(rounds, ".1f"),
                "lower at the largest T than at 0; no step up by more than 5%",
                falls([v for _, v in rounds], SHAPE_SLACK, relative=True),
                None,
                note="answers' lengths change with T too (tokens per answer in the V5 table)",
            )
        )
        if 12 in thresholds:
            gain = change(float(_v5(results, 12, channel)["aal"]), float(aal[0][1]))
            paper = PAPER_AAL_GAIN[channel]
            window = int(results["v5"]["window"])
            rows.append(
                ClaimRow(
                    "V5",
                    f"AAL gain at T = 12 over T = 0, {CHANNEL_WORDS[channel]}",
                    f"{pct(paper)} (Table I, window 10)",
                    f"{pct(gain)} (window {window})",
                    "within ±50% of the paper's gain",
                    gain is not None and gain > 0,
                    gain is not None and within(gain, paper, AAL_GAIN_TOLERANCE),
                    reason=_gain_reason(gain, paper, aal[0][1], window),
                    quick_run=quick,
                )
            )
    if len(channels) == 2 and middle:
        diffs = [
            (t, float(_v5(results, t, "poor")["aal"]) - float(_v5(results, t, "good")["aal"]))
            for t in middle
        ]
        rows.append(
            ClaimRow(
                "V5",
                "AAL on the poor channel ≥ on the good one at the same T (0 < T < 16)",
                "Table I: 20 Mbps > 500 Mbps at every window (7.805 vs 7.478 at 10)",
                "poor − good: " + ", ".join(f"T{t} {d:+.2f}" for t, d in diffs),
                "poor ≥ good at every 0 < T < 16",
                all(d >= 0 for _, d in diffs),
                None,
            )
        )
    return rows


def chosen_threshold(results: dict[str, Any]) -> int | None:
    """The largest threshold whose agreement drop is at most 1 point on every channel
    (``None`` when not even T = 0's is)."""
    best = None
    for t in _thresholds(results):
        drops = [1.0 - float(_v5(results, t, c)["agreement"]) for c in _channels(results)]
        if max(drops) <= AGREEMENT_TOLERANCE:
            best = t
    return best


def _gain_reason(gain: float | None, paper: float, aal0: float, window: int) -> Reason | None:
    """The known cause of an AAL gain far above the paper's (``None`` otherwise)."""
    if gain is None or gain <= paper * (1.0 + AAL_GAIN_TOLERANCE):
        return None
    return Reason(
        Cause.MODELLING,
        f"greedy SD commits {aal0:.2f} tokens per round on this pair against 6.607 in the "
        "paper's, and an accepted mismatch lets a round commit its whole block (up to "
        f"γ + 1 = {window + 1}), so the relative gain is far larger",
    )


def _v6(results: dict[str, Any], rate: float, window: int, method: str) -> dict[str, Any]:
    for cell in results["v6"]["cells"]:
        if cell["uplink_mbps"] == rate and cell["window"] == window and cell["method"] == method:
            found: dict[str, Any] = cell
            return found
    raise KeyError(f"no V6 cell for {rate} Mbit/s, window {window}, {method}")


def v6_reductions(results: dict[str, Any], rate: float, key: str) -> list[tuple[int, float]]:
    """(window, 1 − WISV's ``key`` / greedy's) at ``rate``, by window."""
    windows = sorted({int(c["window"]) for c in results["v6"]["cells"]})
    found = []
    for w in windows:
        greedy = float(_v6(results, rate, w, "greedy")[key])
        wisv = float(_v6(results, rate, w, "wisv")[key])
        found.append((w, 1.0 - wisv / greedy if greedy > 0 else 0.0))
    return found


def _mean(results: dict[str, Any], rate: float, method: str, key: str) -> float:
    """``key`` of ``method``'s cells at ``rate``, averaged over the windows."""
    cells = [
        c for c in results["v6"]["cells"] if c["uplink_mbps"] == rate and c["method"] == method
    ]
    return sum(float(c[key]) for c in cells) / len(cells)


def _saturation(results: dict[str, Any], rate: float) -> Reason | None:
    """The known cause of a flat gap: WISV's answers end within a round or two at every
    window, so its latency barely depends on γ (``None`` when they do not)."""
    rounds = _mean(results, rate, "wisv", "rounds")
    if rounds >= 3.0:
        return None
    return Reason(
        Cause.MODELLING,
        f"WISV's answers end in {rounds:.1f} rounds on average at every window (the draft's "
        "own short answer is accepted whole), so its latency barely depends on γ and the "
        "reduction saturates; the steps between windows are then the noise of a few "
        "prompts on a shared CPU",
    )


def v6_rows(results: dict[str, Any], quick: str = "") -> list[ClaimRow]:
    """V6's rows (module docstring)."""
    rows: list[ClaimRow] = []
    rates = sorted({float(c["uplink_mbps"]) for c in results["v6"]["cells"]})
    rtt = results["v6"]["link_rtt_ms"]
    for rate in rates:
        where = f"{rate:g} Mbit/s, RTT {rtt:g} ms"
        answer = v6_reductions(results, rate, "latency_s")
        token = v6_reductions(results, rate, "latency_per_token_ms")
        show = ", ".join(f"γ{w} {r * 100:+.1f}%" for w, r in answer)
        per_token = ", ".join(f"γ{w} {r * 100:+.1f}%" for w, r in token)
        rows.append(
            ClaimRow(
                "V6",
                f"WISV's latency per answer below greedy SD's at every window, {where}",
                "lower at every window (Orin + A40, Wi-Fi)",
                "reduction " + show,
                "reduction > 0 at every window",
                all(r > 0 for _, r in answer),
                None,
                note=f"per committed token: {per_token}; tokens per answer: greedy "
                f"{_mean(results, rate, 'greedy', 'tokens_per_answer'):.1f}, WISV "
                f"{_mean(results, rate, 'wisv', 'tokens_per_answer'):.1f}",
            )
        )
        largest = answer[-1]
        rows.append(
            ClaimRow(
                "V6",
                f"the gap grows with the window, {where}",
                f"grows; max {PAPER_MAX_REDUCTION:.2%} at window 64 (Qwen)",
                f"{show}; {largest[1]:.1%} at our largest window {largest[0]}",
                "reduction non-decreasing in γ, larger at the largest than the smallest",
                len(answer) >= 2
                and answer[-1][1] > answer[0][1]
                and all(b >= a for (_, a), (_, b) in pairwise(answer)),
                None,
                note=f"magnitude not compared: different window and hardware (Table I, "
                f"simulated, 500 Mbit/s, window 16: {TABLE_I_REDUCTION_16:.1%})",
                reason=_saturation(results, rate),
            )
        )
    wisv = [c for c in results["v6"]["cells"] if c["method"] == "wisv"]
    greedy = [c for c in results["v6"]["cells"] if c["method"] == "greedy"]
    agree = sum(float(c["agreement"]) * c["prompts"] for c in wisv) / sum(
        c["prompts"] for c in wisv
    )
    exact = sum(float(c["agreement"]) * c["prompts"] for c in greedy) / sum(
        c["prompts"] for c in greedy
    )
    threshold = wisv[0]["threshold"] if wisv else 12
    rows.append(
        ClaimRow(
            "V6",
            f"answers on the link: WISV (T = {threshold}) against target-only",
            "≥ 79.6% vs SD 80.4% (Llama); 86% vs 87.3% (Qwen, −1.3 pt)",
            f"{agree:.0%} agree (greedy SD: {exact:.0%})",
            "drop ≤ 1.3 pt",
            None,
            1.0 - agree <= 0.013,
            reason=_pair_reason(results),
            quick_run=quick,
        )
    )
    uploads = sorted({u for c in wisv for u in c["upload"]})
    rows.append(
        ClaimRow(
            "V6",
            f"adaptive upload: FH when the handshake RTT > 10 ms (link RTT {rtt:g} ms)",
            "FH if RTT > 10 ms, else SH",
            "uploads used: " + (", ".join(u.upper() for u in uploads) or "none"),
            "FH only",
            uploads == ["fh"],
            None,
        )
    )
    return rows


def all_rows(results: dict[str, Any], quick: str = "") -> list[ClaimRow]:
    return [*v5_rows(results, quick), *v6_rows(results, quick)]
