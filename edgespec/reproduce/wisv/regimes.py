"""WISV's claim V4 (Fig. 4's regimes): the sign of SH − FH per scenario and window as
Fig. 4's text states it (:data:`STATED`), FH ahead of greedy everywhere, SH behind greedy
at RTT 50 ms.

SH and FH commit the same tokens a round whatever the head, so the sign of SH − FH is
their link costs' (:data:`HEAD_FREE`): two of the three rows hold by construction, and
the third (RTT 50 ms, 20 Mbit/s) misses at every reject share, on the same arithmetic."""

from __future__ import annotations

from edgespec.core.semantic_link import LinkRates
from edgespec.reproduce.claims import Cause, ClaimRow, Reason, pct
from edgespec.reproduce.wisv.runs import WisvResults
from edgespec.reproduce.wisv.setup import GAMMAS, LARGE_WINDOW, RTTS_MS
from edgespec.reproduce.wisv.table_i import TABLE_I, head_reason


def _signs(res: WisvResults, rate: float, rtt: float, worse: str, better: str) -> list[float]:
    """(``worse`` − ``better``) / ``better`` latency per γ."""
    out = []
    for g in GAMMAS:
        a, b = res.get(worse, g, rate, rtt).latency_s, res.get(better, g, rate, rtt).latency_s
        out.append(a / b - 1.0)
    return out


def sh_cost_reason(res: WisvResults, rate: float, rtt: float, gamma: int) -> Reason:
    """Where SH and FH cross on a link (Eqs. 5 and 10 as we read them), at window
    ``gamma``: FH's γ hidden states against SH's round trip and m ≈ γ(1 − α) states."""
    s = res.plan.setup
    p = s.payloads()
    link = LinkRates(rate * 1e6, rtt / 1000.0)
    fh_ms = link.up_s(gamma * p.hidden_bits) * 1e3
    m = gamma * (1.0 - s.alpha)
    sh_ms = rtt + link.up_s(round(m) * p.hidden_bits) * 1e3
    return Reason(
        Cause.MODELLING,
        f"SH's cost as Eq. 10 reads: one more RTT ({rtt:g} ms) and the m ≈ γ(1 − α) "
        f"mismatches' hidden states when a round has any, against FH's γ hidden states: at "
        f"γ = {gamma}, {rate:g} Mbit/s, FH's take {fh_ms:.0f} ms and SH's round trip with "
        f"its ≈{m:.1f} states {sh_ms:.0f} ms; the paper's Fig. 4 numbers are not given to "
        f'see where its two cross ("large windows", read as γ ≥ {LARGE_WINDOW})',
    )


STATED: dict[tuple[float, float], tuple[str, str, tuple[int | None, ...]]] = {
    (50.0, 20.0): (
        "SH slower than FH (RTT 50 ms), but FH slightly slower than SH at large windows "
        "(20 Mbit/s)",
        f"SH > FH at γ < {LARGE_WINDOW}, SH < FH at γ ≥ {LARGE_WINDOW}",
        tuple(+1 if g < LARGE_WINDOW else -1 for g in GAMMAS),
    ),
    (50.0, 500.0): ("SH slower than FH", "SH > FH at every γ", tuple(+1 for _ in GAMMAS)),
    (5.0, 20.0): (
        "FH slightly slower than SH at large windows",
        f"SH < FH at γ ≥ {LARGE_WINDOW}",
        tuple(-1 if g >= LARGE_WINDOW else None for g in GAMMAS),
    ),
}
"""Fig. 4's text per (RTT ms, Mbit/s): what it says, and the sign of SH − FH latency it
states per window (+1 SH slower, −1 SH faster, ``None`` not stated). "When RTT is large
(50 ms), SH ... higher latency than FH" and "under low-rate conditions (20 Mbps), FH
becomes slightly slower than SH at large draft windows" (no RTT named) meet at RTT
50 ms, 20 Mbit/s: the second, "in contrast", holds at its large windows."""


SAME_ROUNDS = (
    "SH and FH commit the same tokens a round for every reject share (the same drafts and "
    "verdicts; only what crosses the link differs), so the sign of SH − FH is that of their "
    "costs a round: "
)
HEAD_FREE: dict[tuple[float, float], str] = {
    (50.0, 500.0): SAME_ROUNDS
    + "at RTT 50 ms, 500 Mbit/s SH's second round trip (50 ms in the 1 − 0.9^γ of rounds "
    "with a mismatch: 33–50 ms a round) outweighs FH's γ hidden states (0.7–4.2 ms), SH "
    "3.7–13.3 % slower at every γ (expected values)",
    (5.0, 20.0): SAME_ROUNDS
    + "at RTT 5 ms, 20 Mbit/s FH's γ hidden states (52 ms at γ = 32, 105 ms at 64) "
    "outweigh SH's second round trip with its m ≈ γ(1 − α) states (10 and 16 ms a round), "
    "SH 6.4–6.8 % faster at γ ≥ 32 (expected values)",
}
"""Why two of :data:`STATED`'s rows cannot come out otherwise, per (RTT ms, Mbit/s); the
third, RTT 50 ms and 20 Mbit/s, is the same arithmetic's too, but a miss (SH 0.2 % slower at
γ = 32 in expected values), judged so that the miss is shown with its cause."""


def v4_rows(res: WisvResults) -> list[ClaimRow]:
    head = head_reason(res)
    rows = []
    unstated = " / ".join(pct(d) for d in _signs(res, 500.0, 5.0, "sh", "fh"))
    for (rtt, rate), (paper, tolerance, signs) in STATED.items():
        diffs = _signs(res, rate, rtt, "sh", "fh")
        ok = all(d * sign > 0 for d, sign in zip(diffs, signs, strict=True) if sign is not None)
        note = "(SH − FH) / FH per window"
        if rtt == 5.0:
            note += f"; at 500 Mbit/s (no claim): {unstated}"
        if (rtt, rate) not in HEAD_FREE:
            note += "; the link costs decide it, not the head (the same tokens a round)"
        off = [
            g
            for g, d, sign in zip(GAMMAS, diffs, signs, strict=True)
            if sign is not None and d * sign <= 0
        ]
        reason = sh_cost_reason(res, rate, rtt, off[0]) if off else head
        rows.append(ClaimRow(
            "V4", f"Fig. 4, RTT {rtt:g} ms, {rate:g} Mbit/s: sign of SH − FH latency, γ = "
            + "/".join(str(g) for g in GAMMAS),
            paper, " / ".join(pct(d) for d in diffs), tolerance, ok, None,
            note=note, reason=reason, by_construction=HEAD_FREE.get((rtt, rate), ""),
        ))  # fmt: skip
    behind = [
        f"RTT {rtt:g} ms, {rate:g} Mbit/s, γ = {g}"
        for rtt in RTTS_MS
        for rate in (20.0, 500.0)
        for g, d in zip(GAMMAS, _signs(res, rate, rtt, "fh", "greedy"), strict=True)
        if d >= 0
    ]
    best = {
        f"{rtt:g} ms/{rate:g}": min(_signs(res, rate, rtt, "fh", "greedy"))
        for rtt in RTTS_MS
        for rate in (20.0, 500.0)
    }
    rows.append(ClaimRow(
        "V4", "WISV FH faster than greedy in every Fig. 4 setting (4 scenarios × 5 windows)",
        "FH < greedy everywhere", "everywhere" if not behind else f"not at {', '.join(behind)}",
        "every cell", not behind, None,
        note="largest cut per RTT/Mbit/s: " + ", ".join(f"{k} {pct(v)}" for k, v in best.items()),
        reason=head,
    ))  # fmt: skip
    sh_vs_greedy = {rate: _signs(res, rate, 50.0, "sh", "greedy") for rate in (20.0, 500.0)}
    worse = all(d > 0 for diffs in sh_vs_greedy.values() for d in diffs)
    rows.append(ClaimRow(
        "V4", "RTT 50 ms: WISV SH slightly slower than greedy",
        "SH ≳ greedy",
        "; ".join(f"{rate:g} Mbit/s: " + " / ".join(pct(d) for d in diffs)
                  for rate, diffs in sh_vs_greedy.items()),
        "SH > greedy at every γ", worse, None, note="(SH − greedy) / greedy per window",
        reason=sh_behind_greedy_reason(res),
    ))  # fmt: skip
    return rows


def sh_behind_greedy_reason(res: WisvResults) -> Reason:
    """Table I's own numbers put SH ahead of greedy at RTT 50 ms from some γ on, under
    Eq. 10 (two RTTs in every round, the payloads negligible at 500 Mbit/s)."""
    s = res.plan.setup
    ahead: list[str] = []
    behind: list[str] = []
    for g in GAMMAS:
        fh, greedy = TABLE_I[("fh", 500.0)][g], TABLE_I[("greedy", 500.0)][g]
        sh = fh[2] * (g * s.draft_s_per_token + 2 * 0.05)  # FH's rounds, two RTTs each
        (ahead if sh < greedy[0] else behind).append(f"γ = {g}: {pct(sh / greedy[0] - 1)}")
    where = "; behind only at " + ", ".join(behind) if behind else ""
    return Reason(
        Cause.INCONSISTENT,
        "Table I's WISV rounds (SH has FH's, the paper says) with Eq. 10's second RTT in "
        "every round put SH at 500 Mbit/s ahead of greedy at "
        + ", ".join(ahead)
        + where
        + "; ours needs the second RTT only in rounds with a mismatch",
    )
