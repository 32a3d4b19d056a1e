"""The pieces V5's and V6's rows share (:mod:`.claims`, :mod:`.link_claims`): the
tolerances, the results dict's V5 cells, curve shapes and the known causes of misses."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from edgespec.reproduce.claims import Cause, Reason

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


def v5_cell(results: dict[str, Any], threshold: int, channel: str) -> dict[str, Any]:
    for cell in results["v5"]["cells"]:
        if cell["threshold"] == threshold and cell["channel"] == channel:
            found: dict[str, Any] = cell
            return found
    raise KeyError(f"no V5 cell for threshold {threshold}, channel {channel}")


def thresholds_of(results: dict[str, Any]) -> list[int]:
    return sorted({int(c["threshold"]) for c in results["v5"]["cells"]})


def channels_of(results: dict[str, Any]) -> list[str]:
    return [c for c in CHANNEL_WORDS if any(x["channel"] == c for x in results["v5"]["cells"])]


def answer_slack(results: dict[str, Any]) -> float:
    """One answer's share of the agreement (1/N)."""
    return 1.0 / max(1, int(results["v5"]["cells"][0]["prompts"]))


def drop_tolerance(results: dict[str, Any], where: str = "") -> str:
    """The agreement tolerance as the rows show it, with what it means when one answer
    weighs more than it (20 prompts: 5 pt an answer, so no answer may change)."""
    text = f"drop ≤ 1 pt{where}"
    num = max(1, int(results["v5"]["cells"][0]["prompts"]))
    if 1.0 / num > AGREEMENT_TOLERANCE:
        text += f": no answer of {num} may change (one is {100 / num:.0f} pt)"
    return text


def curve(results: dict[str, Any], channel: str, key: str) -> list[tuple[int, float]]:
    return [(t, float(v5_cell(results, t, channel)[key])) for t in thresholds_of(results)]


def show(points: Sequence[tuple[int, float]], spec: str) -> str:
    return ", ".join(f"T{t} {format(v, spec)}" for t, v in points)


def falls(values: Sequence[float], slack: float, relative: bool) -> bool:
    """Ends below its start, no step up by more than ``slack`` (relative to the step's
    start when ``relative``)."""
    if len(values) < 2 or not values[-1] < values[0]:
        return False
    return all(b - a <= (slack * abs(a) if relative else slack) for a, b in pairwise(values))


def rises(values: Sequence[float], slack: float, relative: bool) -> bool:
    """Ends above its start, no step down by more than ``slack``."""
    return falls([-v for v in values], slack, relative)


def pair_reason(results: dict[str, Any]) -> Reason | None:
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
        f"critical ({critical:.0%} in the head's training set), and the shipped head "
        f"({about.get('labels', 'base')} labels, repair budget keep-critical) still accepts "
        "many (held-out reject "
        f"share at T = 4: {share['poor'][4]:.2f} poor / "
        f"{share['good'][4]:.2f} good; at T = 12: {share['poor'][12]:.2f} / "
        f"{share['good'][12]:.2f}){accepted}",
    )


CHANNEL_BLIND = 0.02
"""A head whose held-out reject shares on the two channels differ by at most this at every
threshold judged barely reads the channel."""


def channel_reason(results: dict[str, Any], thresholds: Sequence[int]) -> Reason | None:
    """Why the two channels' runs differ only by chance: the shipped head's held-out reject
    shares on them are within :data:`CHANNEL_BLIND` at every T of ``thresholds`` (``None``
    when they are not, or the results do not carry them)."""
    share = results.get("head", {}).get("reject_share")
    if not share or not thresholds:
        return None
    gap = max(abs(share["poor"][t] - share["good"][t]) for t in thresholds)
    if gap > CHANNEL_BLIND:
        return None
    return Reason(
        Cause.MODELLING,
        "the shipped head barely reads the channel (its labels do not depend on it): its "
        f"held-out reject shares on the poor and the good channel differ by at most {gap:.3f} "
        f"at T = {', '.join(str(t) for t in thresholds)}, so the channels' runs differ by "
        "which answers end where, not by the channel",
    )


def length_reason(results: dict[str, Any], channel: str) -> Reason | None:
    """Why rounds per answer step up with T while AAL rises: the answers' lengths change
    (each ends at its final answer), and rounds per committed token fall at every step
    within :data:`SHAPE_SLACK` (``None`` when they do not)."""
    rounds = curve(results, channel, "rounds")
    tokens = curve(results, channel, "tokens_per_answer")
    per_token = [r / max(t, 1e-9) for (_, r), (_, t) in zip(rounds, tokens, strict=True)]
    if not falls(per_token, SHAPE_SLACK, relative=True):
        return None
    up = [(a, b) for a, b in pairwise(zip(rounds, tokens, strict=True)) if b[0][1] > a[0][1]]
    steps = ", ".join(
        f"T{a[0][0]} → T{b[0][0]}: {a[0][1]:.1f} → {b[0][1]:.1f} rounds, "
        f"{a[1][1]:.1f} → {b[1][1]:.1f} tokens"
        for a, b in up
    )
    return Reason(
        Cause.MODELLING,
        "each answer here ends at its final answer, so its length moves with T (Table I's "
        f"answers are ≈208 tokens at every T): where rounds per answer rise ({steps}) the "
        "answers grow more, and rounds per committed token fall at every step ("
        + ", ".join(f"{v:.2f}" for v in per_token)
        + ")",
    )


PATH_FLOOR = 0.5
"""Agreement at or below this: most answers already differ from target-only."""


def path_reason(
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


def chosen_threshold(results: dict[str, Any]) -> int | None:
    """The largest threshold whose agreement drop is at most 1 point on every channel
    (``None`` when not even T = 0's is)."""
    best = None
    for t in thresholds_of(results):
        drops = [1.0 - float(v5_cell(results, t, c)["agreement"]) for c in channels_of(results)]
        if max(drops) <= AGREEMENT_TOLERANCE:
            best = t
    return best


def gain_reason(gain: float | None, paper: float, aal0: float, window: int) -> Reason | None:
    """The known cause of an AAL gain far above the paper's (``None`` otherwise)."""
    if gain is None or gain <= paper * (1.0 + AAL_GAIN_TOLERANCE):
        return None
    return Reason(
        Cause.MODELLING,
        f"greedy SD commits {aal0:.2f} tokens per round on this pair against 6.607 in the "
        "paper's, and an accepted mismatch lets a round commit its whole block (up to "
        f"γ + 1 = {window + 1}), so the relative gain is far larger",
    )
