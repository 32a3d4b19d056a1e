"""V6 on the real pair (Figs. 6–7) as claim rows: WISV's latency per committed token below
greedy SD's at every window, the gap growing with the window (per token: :data:`PER_TOKEN`;
per answer in the notes), the answers' agreement over the link, and FH chosen by the
handshake RTT (> 10 ms, by construction on our fixed RTT: :data:`FIXED_RTT`).

The two latency rows compare wall-clock times. A quick run times too few answers on a
shared CPU to tell a direction from the noise: there they are not comparable (quick run),
their numbers shown (:func:`_not_comparable`). A latency row that misses says why from the
run's own numbers (:func:`_round_reason`, or :func:`_saturation`)."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise
from typing import Any

from edgespec.reproduce.claims import Cause, ClaimRow, Reason
from edgespec.reproduce.wisv.real_pair.verdicts import (
    PAPER_MAX_REDUCTION,
    TABLE_I_REDUCTION_16,
    pair_reason,
)

FIXED_RTT = (
    "the emulated link's RTT is ours, fixed above 10 ms, so FH is our rule's answer to an "
    "input we set: a check of our code (a miss if another upload was used), not evidence"
)
"""Why the adaptive-upload row holds by construction when it holds."""


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


TESTBED = (
    "our stand-in testbed (a loopback server and its drafter on one shared CPU, one torch "
    "thread, behind an emulated link; the paper's is Orin + A40 over Wi-Fi)"
)


def _round_reason(results: dict[str, Any], rate: float) -> Reason:
    """Why WISV's latency per token stands where it does against greedy's at ``rate``:
    per token is a round's time over the tokens it commits, both from the run's cells."""
    windows = sorted({int(c["window"]) for c in results["v6"]["cells"]})
    parts = []
    for w in windows:
        each = [_v6(results, rate, w, m) for m in ("wisv", "greedy")]
        ms = [1e3 * float(c["latency_s"]) / float(c["rounds"]) for c in each]
        tokens = [float(c["tokens_per_answer"]) / float(c["rounds"]) for c in each]
        parts.append(f"γ{w} {ms[0]:.0f} vs {ms[1]:.0f} ms a round, {tokens[0]:.2f} vs "
                     f"{tokens[1]:.2f} tokens")  # fmt: skip
    return Reason(
        Cause.MODELLING,
        f"{TESTBED}: latency per token is a round's time over the tokens it commits, WISV "
        "against greedy SD (WISV's rounds also carry the head and FH's hidden states): "
        + "; ".join(parts),
    )


def _not_comparable(row: ClaimRow, quick: str, prompts: int) -> ClaimRow:
    """A wall-clock ``row`` of a quick run: its direction not judged either, its outcome
    "not comparable (quick run)", its numbers shown."""
    judged = row.direction_ok if row.direction_ok is not None else row.magnitude_ok
    why = (
        f"wall-clock latency of {prompts} answer{'s' * (prompts != 1)} a cell on a shared "
        "CPU: too few to tell a direction from timing noise, so the direction is not judged "
        "either"
    )
    return replace(row, direction_ok=None, magnitude_ok=bool(judged), quick_run=f"{quick}; {why}")


PER_TOKEN = (
    "judged per committed token: the paper's answers are as long for every method (Table I: "
    "AAL × rounds ≈ 204–212 tokens) at accuracy within 1.3 pt, so its latency per answer is "
    "one per token; ours differ in length"
)
"""Why V6's latency rows judge the latency per committed token, not per answer."""


def _gap_rows(results: dict[str, Any], rate: float, quick: str) -> list[ClaimRow]:
    """WISV below greedy per committed token at every window at ``rate``, and the gap
    growing with γ; the latency per answer shown in the note (:data:`PER_TOKEN`); not
    comparable in a quick run (``quick``: what it shortened)."""
    rtt = results["v6"]["link_rtt_ms"]
    where = f"{rate:g} Mbit/s, RTT {rtt:g} ms"
    answer = v6_reductions(results, rate, "latency_s")
    token = v6_reductions(results, rate, "latency_per_token_ms")
    per_answer = ", ".join(f"γ{w} {r * 100:+.1f}%" for w, r in answer)
    shown = ", ".join(f"γ{w} {r * 100:+.1f}%" for w, r in token)
    largest = token[-1]
    grows = (
        len(token) >= 2
        and token[-1][1] > token[0][1]
        and all(b >= a for (_, a), (_, b) in pairwise(token))
    )
    lengths = (
        f"per answer: {per_answer}; tokens per answer: greedy "
        f"{_mean(results, rate, 'greedy', 'tokens_per_answer'):.1f}, WISV "
        f"{_mean(results, rate, 'wisv', 'tokens_per_answer'):.1f}; agreement: greedy "
        f"{_mean(results, rate, 'greedy', 'agreement'):.0%}, WISV "
        f"{_mean(results, rate, 'wisv', 'agreement'):.0%}"
    )
    rows = [
        ClaimRow(
            "V6", f"WISV's latency per token below greedy SD's at every window, {where}",
            "lower at every window (Orin + A40, Wi-Fi)", "reduction " + shown,
            "reduction > 0 at every window", all(r > 0 for _, r in token), None,
            note=f"{PER_TOKEN}; {lengths}", reason=_round_reason(results, rate),
        ),
        ClaimRow(
            "V6", f"the gap grows with the window (per token), {where}",
            f"grows; max {PAPER_MAX_REDUCTION:.2%} at window 64 (Qwen)",
            f"{shown}; {largest[1]:.1%} at our largest window {largest[0]}",
            "reduction non-decreasing in γ, larger at the largest than the smallest", grows,
            None, note=f"magnitude not compared: different window and hardware (Table I, "
            f"simulated, 500 Mbit/s, window 16: {TABLE_I_REDUCTION_16:.1%}); {lengths}",
            reason=_saturation(results, rate) or _round_reason(results, rate),
        ),
    ]  # fmt: skip
    if not quick:
        return rows
    prompts = min(int(c["prompts"]) for c in results["v6"]["cells"])
    return [_not_comparable(row, quick, prompts) for row in rows]


def _weighted_agreement(cells: list[dict[str, Any]]) -> float:
    prompts = sum(int(c["prompts"]) for c in cells)
    return sum(float(c["agreement"]) * int(c["prompts"]) for c in cells) / prompts


def v6_rows(results: dict[str, Any], quick: str = "") -> list[ClaimRow]:
    """V6's rows (module docstring)."""
    rates = sorted({float(c["uplink_mbps"]) for c in results["v6"]["cells"]})
    rtt = results["v6"]["link_rtt_ms"]
    rows = [row for rate in rates for row in _gap_rows(results, rate, quick)]
    wisv = [c for c in results["v6"]["cells"] if c["method"] == "wisv"]
    greedy = [c for c in results["v6"]["cells"] if c["method"] == "greedy"]
    agree, exact = _weighted_agreement(wisv), _weighted_agreement(greedy)
    threshold = wisv[0]["threshold"] if wisv else 12
    uploads = sorted({u for c in wisv for u in c["upload"]})
    rows.append(ClaimRow(
        "V6", f"answers on the link: WISV (T = {threshold}) against target-only",
        "≥ 79.6% vs SD 80.4% (Llama); 86% vs 87.3% (Qwen, −1.3 pt)",
        f"{agree:.0%} agree (greedy SD: {exact:.0%})", "drop ≤ 1.3 pt", None,
        1.0 - agree <= 0.013, reason=pair_reason(results), quick_run=quick,
    ))  # fmt: skip
    rows.append(ClaimRow(
        "V6", f"adaptive upload: FH when the handshake RTT > 10 ms (link RTT {rtt:g} ms)",
        "FH if RTT > 10 ms, else SH",
        "uploads used: " + (", ".join(u.upper() for u in uploads) or "none"), "FH only",
        uploads == ["fh"], None, by_construction=FIXED_RTT if uploads == ["fh"] else "",
    ))  # fmt: skip
    return rows
