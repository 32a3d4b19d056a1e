"""WISV's claims V1–V4 (SEED-NOTES §5) and Fig. 5's ablation as :class:`ClaimRow` s, from
:class:`~edgespec.reproduce.wisv.runs.WisvResults`.

* V1: Table I's AAL (committed tokens per round, the target's token included) and rounds
  per answer, every cell within ±25 %; WISV's headline gains at γ = 64 on the 20 Mbit/s
  link (+60.7 % AAL, −37.3 % rounds: a gain and a cut by construction,
  :data:`MORE_PER_ROUND`, so judged on their magnitude alone), the gain growing with γ (by
  construction: :data:`GAIN_GROWS`), the poor link more permissive than the good one
  (:mod:`.heads`).
* V2: Table I's latency and throughput, every cell within ±25 % (the round time is
  SEED-NOTES' stand-in, 18.91 ms per drafted token + the link); WISV FH's −31.4 % at
  γ = 64 on the 500 Mbit/s link (a cut by construction, :data:`FASTER`: its magnitude
  judged), the reduction growing with γ (by construction: :data:`CUT_GROWS`).
* V3: rejection-sampling SD: its latency and throughput cells within ±10 %, its extra time
  per round (γ × V × 16 bits / R, pure arithmetic) within ±10 % of what Table I implies,
  slowest everywhere (by construction: :data:`SLOWEST`), collapsing at 20 Mbit/s.
* V4: Fig. 4's regimes: the sign of SH − FH per scenario (all three decided by the
  expected round times, :func:`~edgespec.reproduce.wisv.regimes.head_free`: two hold, one
  misses at every share), FH ahead of greedy everywhere and SH behind greedy at RTT 50 ms
  (by construction where no share the heads can give turns a setting,
  :mod:`.expected`).
* Fig. 5: the head trained without the CSI-aware relabelling (``keep-critical``, the
  runtime's shipped head) rejects more on the poor link than WISV's relabelled one: lower
  AAL, higher latency (directions only, :mod:`.heads`; not judged without its table; by
  construction of our labels where the tables record their budgets).

Rows whose number a fitted input fixes are settings, never judged (:mod:`.table_i`):
V1's greedy and rejection-sampling AAL and rounds (α = 0.9), V2's greedy latency and
throughput (18.91 ms per token + RTT), and every V3 row but "the slowest" (γ·V·16 bits / R
on that fit).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from edgespec.core.semantic_link import LinkRates, Payloads
from edgespec.reproduce.claims import Cause, ClaimRow, Reason, pct, within
from edgespec.reproduce.wisv.heads import fig5_rows, permissive_row
from edgespec.reproduce.wisv.regimes import v4_rows
from edgespec.reproduce.wisv.runs import WisvResults
from edgespec.reproduce.wisv.setup import GAMMAS, RTTS_MS
from edgespec.reproduce.wisv.table_i import (
    CELL,
    FIT_ALPHA,
    FIT_PAYLOAD,
    FIT_ROUND,
    GREEDY_TAIL,
    PAYLOAD,
    TABLE_I,
    cell_row,
    gains,
    head_reason,
    relative_row,
    series,
)

GAIN_GROWS = (
    "i.i.d. acceptance α and a reject share r that does not read γ: a WISV round goes on "
    "past a position with α' = α + (1 − α)(1 − r) > α, and its committed tokens per round "
    "(1 − α'^(γ+1))/(1 − α') over greedy's (1 − α^(γ+1))/(1 − α) rise with γ for every "
    "r < 1 (a ratio of geometric sums whose terms' ratio grows)"
)
"""Why V1's "the AAL gain grows with γ" cannot come out otherwise."""
CUT_GROWS = (
    "i.i.d. acceptance α and a reject share r that does not read γ: greedy's rounds over "
    "WISV's rise with γ for every r < 1 (V1's gain), and FH's hidden states add under 0.4 % "
    "to a round at 500 Mbit/s, so the cut grows with γ for every share up to 0.995 "
    "(expected values, both RTTs)"
)
"""Why V2's "the latency reduction grows with γ" cannot come out otherwise."""
MORE_PER_ROUND = (
    "a WISV round goes on past a position with α' = α + (1 − α)(1 − r) > α for every reject "
    "share r < 1, so it commits more tokens a round than greedy's, and takes fewer rounds, "
    "whatever the head (expected values)"
)
"""Why V1's γ = 64 gain and rounds cut are a gain and a cut."""
FASTER = (
    "greedy's rounds over WISV's exceed 1 for every reject share r < 1 (V1's gain), and FH's "
    "hidden states add under 0.4 % to a round at 500 Mbit/s, so WISV FH is faster than greedy "
    "for every share up to 0.995 (expected values)"
)
"""Why V2's γ = 64 latency change is a cut."""
SLOWEST = (
    "rejection sampling's rounds are greedy's (α = 0.9, exact verification) with γ × V × 16 "
    "bits more on the uplink, 62.6× FH's γ × d_h × 16; FH and SH commit at least greedy's "
    "tokens a round for every reject share, and SH's second round trip, paid in the "
    "1 − 0.9^γ of rounds with a mismatch, costs less than the probabilities everywhere: at "
    "its nearest (γ = 10, 500 Mbit/s, RTT 50 ms, every mismatch rejected) rejection sampling "
    "is 3.1 % slower than the slowest other method (expected values)"
)
"""Why V3's "rejection-sampling SD the slowest method" cannot come out otherwise."""


def v1_rows(res: WisvResults) -> list[ClaimRow]:
    head = head_reason(res)
    rows = []
    for rate in (20.0, 500.0):
        for method in ("fh", "greedy", "reject"):
            for metric in ("AAL", "rounds"):
                reason = head if method == "fh" else GREEDY_TAIL
                fixed = "" if method == "fh" else FIT_ALPHA
                rows.append(cell_row(res, "V1", method, rate, metric, CELL, reason, fixed))
    g = GAMMAS[-1]
    paper_fh, paper_greedy = TABLE_I[("fh", 20.0)][g], TABLE_I[("greedy", 20.0)][g]
    fh, greedy = res.get("fh", g, 20.0), res.get("greedy", g, 20.0)
    rows.append(relative_row(
        "V1", f"WISV FH AAL vs greedy, γ = {g}, 20 Mbit/s", paper_fh[1], paper_greedy[1],
        fh.committed_per_round, greedy.committed_per_round, MORE_PER_ROUND, head,
        printed=0.608,  # the abstract's +60.8 %: 17.343 / 10.789 − 1 is +60.7 %
    ))  # fmt: skip
    rows.append(relative_row(
        "V1", f"WISV FH rounds vs greedy, γ = {g}, 20 Mbit/s", paper_fh[2], paper_greedy[2],
        fh.rounds_per_answer, greedy.rounds_per_answer, MORE_PER_ROUND, head,
    ))  # fmt: skip
    for rate in (20.0, 500.0):
        found = gains(res, "AAL", rate)
        paper = [TABLE_I[("fh", rate)][g][1] / TABLE_I[("greedy", rate)][g][1] - 1 for g in GAMMAS]
        grows = all(b > a for a, b in pairwise(found))
        rows.append(ClaimRow(
            "V1", f"WISV FH's AAL gain over greedy grows with γ, {rate:g} Mbit/s",
            " → ".join(pct(p) for p in paper), " → ".join(pct(x) for x in found),
            "increasing in γ", grows, None, reason=head, by_construction=GAIN_GROWS,
        ))  # fmt: skip
    rows.append(permissive_row(res))
    return rows


def v2_rows(res: WisvResults) -> list[ClaimRow]:
    head = head_reason(res)
    rows = []
    for rate in (500.0, 20.0):
        for method in ("fh", "greedy"):
            for metric in ("latency", "throughput"):
                reason = head if method == "fh" else GREEDY_TAIL
                fixed = "" if method == "fh" else FIT_ROUND
                rows.append(cell_row(res, "V2", method, rate, metric, CELL, reason, fixed))
    g = GAMMAS[-1]
    rows.append(relative_row(
        "V2", f"WISV FH latency vs greedy, γ = {g}, 500 Mbit/s",
        TABLE_I[("fh", 500.0)][g][0], TABLE_I[("greedy", 500.0)][g][0],
        res.get("fh", g, 500.0).latency_s, res.get("greedy", g, 500.0).latency_s, FASTER, head,
    ))  # fmt: skip
    cuts = gains(res, "latency", 500.0)
    paper = [TABLE_I[("fh", 500.0)][g][0] / TABLE_I[("greedy", 500.0)][g][0] - 1 for g in GAMMAS]
    best = min(min(gains(res, "latency", 500.0, rtt)) for rtt in RTTS_MS)
    rows.append(ClaimRow(
        "V2", "WISV FH's latency reduction over greedy grows with γ, 500 Mbit/s",
        " → ".join(pct(p) for p in paper), " → ".join(pct(c) for c in cuts),
        "falling (larger cuts) in γ", all(b < a for a, b in pairwise(cuts)),
        None, note=f"largest cut at 500 Mbit/s over both RTTs: {pct(best)} (paper: up to −31.4 %)",
        reason=head, by_construction=CUT_GROWS,
    ))  # fmt: skip
    return rows


def per_round_extra_s(p: Payloads, gamma: int, rate_mbps: float) -> float:
    """Rejection sampling's extra time per round over greedy: γ × V × 16 bits / R."""
    return LinkRates(rate_mbps * 1e6, 0.05).up_s(p.probabilities_bits(gamma))


def v3_rows(res: WisvResults) -> list[ClaimRow]:
    rows = []
    for rate in (20.0, 500.0):
        for metric in ("latency", "throughput"):
            rows.append(
                cell_row(res, "V3", "reject", rate, metric, PAYLOAD, GREEDY_TAIL, FIT_PAYLOAD)
            )
    p = res.plan.setup.payloads()
    for rate in (20.0, 500.0):
        implied, ours = [], []
        for g in GAMMAS:
            rej, gre = TABLE_I[("reject", rate)][g], TABLE_I[("greedy", rate)][g]
            implied.append((rej[0] - gre[0]) / rej[2] * 1e3)
            ours.append(per_round_extra_s(p, g, rate) * 1e3)
        off = [
            g for g, o, q in zip(GAMMAS, ours, implied, strict=True) if not within(o, q, PAYLOAD)
        ]
        rows.append(ClaimRow(
            "V3",
            f"rejection sampling's extra time per round, γ × 128,256 × 16 bit / R, {rate:g} Mbit/s",
            series(implied, ".1f") + " ms (Table I: Δlatency / rounds)",
            series(ours, ".1f") + " ms", "each ±10 %", None, not off,
            note="pure arithmetic, no run" + (f"; outside at γ = {off}" if off else ""),
            reason=Reason(Cause.MODELLING, "Table I's rounds and latencies round to 3 decimals"),
            setting=FIT_PAYLOAD,
        ))  # fmt: skip
    slowest, where = True, []
    for rtt in RTTS_MS:
        for rate in (20.0, 500.0):
            for g in GAMMAS:
                slow = res.get("reject", g, rate, rtt).latency_s
                others = [res.get(m, g, rate, rtt).latency_s for m in ("greedy", "fh", "sh")]
                if not slow > max(others):
                    slowest = False
                    where.append(f"RTT {rtt:g} ms, {rate:g} Mbit/s, γ = {g}")
    rows.append(ClaimRow(
        "V3", "rejection-sampling SD the slowest method (Fig. 4, 4 scenarios × 5 windows)",
        "slowest everywhere", "slowest everywhere" if slowest else f"not at {', '.join(where)}",
        "every cell", slowest, None, by_construction=SLOWEST,
    ))  # fmt: skip
    g = GAMMAS[-1]
    paper_ratio = TABLE_I[("reject", 20.0)][g][0] / TABLE_I[("reject", 500.0)][g][0]
    ratio = res.get("reject", g, 20.0).latency_s / res.get("reject", g, 500.0).latency_s
    rows.append(ClaimRow(
        "V3", f"rejection sampling collapses at 20 Mbit/s: latency 20 / 500 Mbit/s, γ = {g}",
        f"{TABLE_I[('reject', 20.0)][g][0]:.3f} / {TABLE_I[('reject', 500.0)][g][0]:.3f} s = "
        f"{paper_ratio:.2f}×",
        f"{res.get('reject', g, 20.0).latency_s:.3f} / {res.get('reject', g, 500.0).latency_s:.3f}"
        f" s = {ratio:.2f}×",
        "ratio > 1; ±10 %", ratio > 1.0, within(ratio, paper_ratio, PAYLOAD),
        reason=GREEDY_TAIL, setting=FIT_PAYLOAD,
    ))  # fmt: skip
    return rows


ROW_BUILDERS: tuple[Callable[[WisvResults], list[ClaimRow]], ...] = (
    v1_rows,
    v2_rows,
    v3_rows,
    v4_rows,
    fig5_rows,
)


def all_rows(res: WisvResults) -> list[ClaimRow]:
    return [row for build in ROW_BUILDERS for row in build(res)]
