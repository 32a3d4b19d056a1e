"""What SH's second round trip costs against FH's hidden states and against greedy, in the
words of V4's causes (:mod:`.regimes`)."""

from __future__ import annotations

from edgespec.core.semantic_link import LinkRates
from edgespec.reproduce.claims import Cause, Reason, pct
from edgespec.reproduce.wisv.runs import WisvResults
from edgespec.reproduce.wisv.setup import GAMMAS, LARGE_WINDOW
from edgespec.reproduce.wisv.table_i import TABLE_I


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
