"""WISV's claims V1–V4 (SEED-NOTES §5) and Fig. 5's ablation as :class:`ClaimRow` s, from
:class:`~edgespec.reproduce.wisv.runs.WisvResults`.

* V1: Table I's AAL (committed tokens per round, the target's token included) and rounds
  per answer, every cell within ±25 %; WISV's headline gains at γ = 64 on the 20 Mbit/s
  link (+60.8 % AAL, −37.3 % rounds), the gain growing with γ, the poor link more
  permissive than the good one.
* V2: Table I's latency and throughput, every cell within ±25 % (the round time is
  SEED-NOTES' stand-in, 18.91 ms per drafted token + the link); WISV FH's −31.4 % at
  γ = 64 on the 500 Mbit/s link, the reduction growing with γ.
* V3: rejection-sampling SD: its latency and throughput cells within ±10 %, its extra time
  per round (γ × V × 16 bits / R, pure arithmetic) within ±10 % of what Table I implies,
  slowest everywhere, collapsing at 20 Mbit/s.
* V4: Fig. 4's regimes: the sign of SH − FH per scenario, FH ahead of greedy everywhere,
  SH behind greedy at RTT 50 ms.
* Fig. 5: the head trained without the CSI-aware relabelling rejects more on the poor
  link: lower AAL, higher latency (directions only; not judged without its table).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise

from edgespec.core.semantic_link import LinkRates, Payloads
from edgespec.reproduce.claims import Cause, ClaimRow, Reason, change, pct, within
from edgespec.reproduce.wisv.runs import ABLATION, WisvPlan, WisvResults, WisvRunSummary
from edgespec.reproduce.wisv.setup import ABLATION_TABLE, GAMMAS, METHOD_NAMES, RTTS_MS, TABLE

CELL = 0.25
PAYLOAD = 0.10
Cells = dict[int, tuple[float, float, float, float]]
"""γ → (latency s, AAL, rounds, throughput tok/s) of one Table I row group."""

TABLE_I: dict[tuple[str, float], Cells] = {
    ("greedy", 500.0): {
        10: (7.616, 6.607, 31.912, 27.683), 16: (8.842, 8.336, 25.128, 23.689),
        24: (11.074, 9.513, 22.020, 18.916), 32: (13.525, 10.128, 20.680, 15.484),
        64: (24.272, 10.789, 19.272, 8.566),
    },
    ("reject", 500.0): {
        10: (8.962, 6.595, 32.036, 23.577), 16: (10.543, 8.305, 25.244, 19.886),
        24: (13.313, 9.486, 22.132, 15.770), 32: (16.376, 10.060, 20.848, 12.806),
        64: (29.570, 10.708, 19.424, 7.033),
    },
    ("fh", 500.0): {
        10: (6.634, 7.478, 27.736, 31.267), 16: (7.317, 9.991, 20.732, 28.309),
        24: (8.604, 12.142, 17.044, 24.052), 32: (10.021, 13.522, 15.260, 20.592),
        64: (16.653, 15.489, 13.152, 12.233),
    },
    ("greedy", 20.0): {
        10: (7.617, 6.607, 31.912, 27.681), 16: (8.843, 8.336, 25.128, 23.687),
        24: (11.075, 9.513, 22.020, 18.915), 32: (13.527, 10.128, 20.680, 15.483),
        64: (24.274, 10.789, 19.272, 8.566),
    },
    ("reject", 20.0): {
        10: (40.542, 6.586, 32.040, 5.205), 16: (50.096, 8.335, 25.112, 4.179),
        24: (65.493, 9.505, 22.072, 3.203), 32: (81.731, 10.104, 20.744, 2.564),
        64: (151.663, 10.763, 19.368, 1.374),
    },
    ("fh", 20.0): {
        10: (6.816, 7.805, 27.144, 31.083), 16: (7.553, 10.630, 19.936, 28.057),
        24: (8.832, 13.230, 15.976, 23.930), 32: (10.140, 14.979, 13.892, 20.522),
        64: (17.394, 17.343, 12.092, 12.057),
    },
}  # fmt: skip
"""Table I as printed (RTT 50 ms, threshold 12; WISV is FH)."""
METRICS = ("latency", "AAL", "rounds", "throughput")
UNITS = {"latency": " s", "AAL": "", "rounds": "", "throughput": " tok/s"}
LABELS = {
    "latency": "latency per answer",
    "AAL": "AAL (committed per round)",
    "rounds": "rounds per answer",
    "throughput": "throughput",
}

GREEDY_TAIL = Reason(
    Cause.MISSING_INPUT,
    "the Llama pair's GSM8K acceptance: i.i.d. α = 0.9 stands in, and its tail is lighter "
    "than the paper's at γ ≥ 24 (committed per round 9.99 against 10.789 at γ = 64), so "
    "every method takes more rounds there",
)


def head_reason(res: WisvResults) -> Reason:
    """Why a WISV cell can miss: the head is the Gemma pair's, not the paper's."""
    shares = res.shares.get(TABLE, {})
    said = ", ".join(f"{share:.3f} on {link}" for link, share in shares.items())
    return Reason(
        Cause.MISSING_INPUT,
        "the paper's decision head (Llama-3.2-1B/3.1-8B hidden states, its critical-mismatch "
        "labels): ours rejects the share of greedy mismatches the Gemma 3 270M pair's head "
        f"rejects at T = 12 ({said}); Table I's AAL implies ≈0.58 (20 Mbit/s) and ≈0.65 "
        "(500 Mbit/s) under α = 0.9",
    )


def quick_run(res: WisvResults) -> str:
    """What a ``--quick`` run shortened (empty for a full run)."""
    if not res.plan.quick:
        return ""
    return f"{res.plan.answers} answers per run (the full run: {WisvPlan.full().answers})"


def _value(s: WisvRunSummary, metric: str) -> float:
    return {
        "latency": s.latency_s,
        "AAL": s.committed_per_round,
        "rounds": s.rounds_per_answer,
        "throughput": s.throughput_tokens_per_s,
    }[metric]


def _series(values: Sequence[float], digits: str = ".3f") -> str:
    return " / ".join(format(v, digits) for v in values)


def cell_row(
    res: WisvResults,
    claim: str,
    method: str,
    rate: float,
    metric: str,
    tolerance: float,
    reason: Reason,
) -> ClaimRow:
    """Table I's ``metric`` of ``method`` at ``rate`` over every γ: each cell within
    ``tolerance`` of the paper's."""
    index = METRICS.index(metric)
    paper = [TABLE_I[(method, rate)][g][index] for g in GAMMAS]
    ours = [_value(res.get(method, g, rate), metric) for g in GAMMAS]
    off = [
        f"γ = {g}: {pct(change(o, p))}"
        for g, o, p in zip(GAMMAS, ours, paper, strict=True)
        if not within(o, p, tolerance)
    ]
    worst = max(abs(o / p - 1.0) for o, p in zip(ours, paper, strict=True))
    note = f"largest gap {worst * 100:.1f} %" + (f"; outside: {', '.join(off)}" if off else "")
    unit = UNITS[metric]
    return ClaimRow(
        claim,
        f"Table I {LABELS[metric]}, {METHOD_NAMES[method]}, {rate:g} Mbit/s, γ = "
        + "/".join(str(g) for g in GAMMAS),
        _series(paper) + unit,
        _series(ours) + unit,
        f"each cell ±{tolerance * 100:.0f} %",
        None,
        not off,
        note=note,
        reason=reason,
        quick_run=quick_run(res),
    )


def _relative_row(
    res: WisvResults,
    claim: str,
    what: str,
    paper_new: float,
    paper_old: float,
    ours_new: float,
    ours_old: float,
    sign: int,
    reason: Reason,
) -> ClaimRow:
    """A headline relative change (``sign`` +1: a gain, −1: a cut), ±25 % of the paper's."""
    paper, ours = change(paper_new, paper_old), change(ours_new, ours_old)
    assert paper is not None
    return ClaimRow(
        claim,
        what,
        f"{paper_new:.3f} vs {paper_old:.3f} ({pct(paper)})",
        f"{ours_new:.3f} vs {ours_old:.3f} ({pct(ours)})",
        f"{'gain' if sign > 0 else 'cut'}; ±25 % of {pct(paper)}",
        ours is not None and ours * sign > 0,
        ours is not None and within(ours, paper, CELL),
        reason=reason,
        quick_run=quick_run(res),
    )


def _gains(res: WisvResults, metric: str, rate: float, rtt: float = 50.0) -> list[float]:
    """WISV FH's relative change of ``metric`` against greedy, per γ."""
    out = []
    for g in GAMMAS:
        c = change(
            _value(res.get("fh", g, rate, rtt), metric),
            _value(res.get("greedy", g, rate, rtt), metric),
        )
        out.append(0.0 if c is None else c)
    return out


def v1_rows(res: WisvResults) -> list[ClaimRow]:
    head = head_reason(res)
    rows = []
    for rate in (20.0, 500.0):
        for method in ("fh", "greedy", "reject"):
            for metric in ("AAL", "rounds"):
                reason = head if method == "fh" else GREEDY_TAIL
                rows.append(cell_row(res, "V1", method, rate, metric, CELL, reason))
    g = GAMMAS[-1]
    paper_fh, paper_greedy = TABLE_I[("fh", 20.0)][g], TABLE_I[("greedy", 20.0)][g]
    fh, greedy = res.get("fh", g, 20.0), res.get("greedy", g, 20.0)
    rows.append(_relative_row(
        res, "V1", f"WISV FH AAL vs greedy, γ = {g}, 20 Mbit/s", paper_fh[1], paper_greedy[1],
        fh.committed_per_round, greedy.committed_per_round, +1, head,
    ))  # fmt: skip
    rows.append(_relative_row(
        res, "V1", f"WISV FH rounds vs greedy, γ = {g}, 20 Mbit/s", paper_fh[2], paper_greedy[2],
        fh.rounds_per_answer, greedy.rounds_per_answer, -1, head,
    ))  # fmt: skip
    for rate in (20.0, 500.0):
        gains = _gains(res, "AAL", rate)
        paper = [TABLE_I[("fh", rate)][g][1] / TABLE_I[("greedy", rate)][g][1] - 1 for g in GAMMAS]
        grows = all(b > a for a, b in pairwise(gains))
        rows.append(ClaimRow(
            "V1", f"WISV FH's AAL gain over greedy grows with γ, {rate:g} Mbit/s",
            " → ".join(pct(p) for p in paper), " → ".join(pct(x) for x in gains),
            "increasing in γ", grows, None, reason=head,
        ))  # fmt: skip
    poor = [res.get("fh", g, 20.0).committed_per_round for g in GAMMAS]
    good = [res.get("fh", g, 500.0).committed_per_round for g in GAMMAS]
    paper_poor = [TABLE_I[("fh", 20.0)][g][1] for g in GAMMAS]
    paper_good = [TABLE_I[("fh", 500.0)][g][1] for g in GAMMAS]
    rows.append(ClaimRow(
        "V1", "the poor link (20 Mbit/s) more permissive than the good (500): WISV FH AAL",
        f"{_series(paper_poor)} vs {_series(paper_good)}", f"{_series(poor)} vs {_series(good)}",
        "higher at 20 Mbit/s at every γ",
        all(p > q for p, q in zip(poor, good, strict=True)), None, reason=head,
    ))  # fmt: skip
    return rows


def v2_rows(res: WisvResults) -> list[ClaimRow]:
    head = head_reason(res)
    rows = []
    for rate in (500.0, 20.0):
        for method in ("fh", "greedy"):
            for metric in ("latency", "throughput"):
                reason = head if method == "fh" else GREEDY_TAIL
                rows.append(cell_row(res, "V2", method, rate, metric, CELL, reason))
    g = GAMMAS[-1]
    rows.append(_relative_row(
        res, "V2", f"WISV FH latency vs greedy, γ = {g}, 500 Mbit/s",
        TABLE_I[("fh", 500.0)][g][0], TABLE_I[("greedy", 500.0)][g][0],
        res.get("fh", g, 500.0).latency_s, res.get("greedy", g, 500.0).latency_s, -1, head,
    ))  # fmt: skip
    cuts = _gains(res, "latency", 500.0)
    paper = [TABLE_I[("fh", 500.0)][g][0] / TABLE_I[("greedy", 500.0)][g][0] - 1 for g in GAMMAS]
    best = min(min(_gains(res, "latency", 500.0, rtt)) for rtt in RTTS_MS)
    rows.append(ClaimRow(
        "V2", "WISV FH's latency reduction over greedy grows with γ, 500 Mbit/s",
        " → ".join(pct(p) for p in paper), " → ".join(pct(c) for c in cuts),
        "falling (larger cuts) in γ", all(b < a for a, b in pairwise(cuts)),
        None, note=f"largest cut at 500 Mbit/s over both RTTs: {pct(best)} (paper: up to −31.4 %)",
        reason=head,
    ))  # fmt: skip
    return rows


def per_round_extra_s(p: Payloads, gamma: int, rate_mbps: float) -> float:
    """Rejection sampling's extra time per round over greedy: γ × V × 16 bits / R."""
    return LinkRates(rate_mbps * 1e6, 0.05).up_s(p.probabilities_bits(gamma))


def v3_rows(res: WisvResults) -> list[ClaimRow]:
    rows = []
    for rate in (20.0, 500.0):
        for metric in ("latency", "throughput"):
            rows.append(cell_row(res, "V3", "reject", rate, metric, PAYLOAD, GREEDY_TAIL))
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
            _series(implied, ".1f") + " ms (Table I: Δlatency / rounds)",
            _series(ours, ".1f") + " ms", "each ±10 %", None, not off,
            note="pure arithmetic, no run" + (f"; outside at γ = {off}" if off else ""),
            reason=Reason(Cause.MODELLING, "Table I's rounds and latencies round to 3 decimals"),
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
        "every cell", slowest, None, reason=GREEDY_TAIL,
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
        reason=GREEDY_TAIL, quick_run=quick_run(res),
    ))  # fmt: skip
    return rows


def _signs(res: WisvResults, rate: float, rtt: float, worse: str, better: str) -> list[float]:
    """(``worse`` − ``better``) / ``better`` latency per γ."""
    out = []
    for g in GAMMAS:
        a, b = res.get(worse, g, rate, rtt).latency_s, res.get(better, g, rate, rtt).latency_s
        out.append(a / b - 1.0)
    return out


def sh_cost_reason(res: WisvResults, rate: float, rtt: float) -> Reason:
    """Why SH can beat FH on a slow link at RTT 50 ms (Eqs. 5 and 10 as we read them)."""
    p = res.plan.setup.payloads()
    link = LinkRates(rate * 1e6, rtt / 1000.0)
    fh_ms = link.up_s(GAMMAS[-1] * p.hidden_bits) * 1e3
    return Reason(
        Cause.MODELLING,
        f"SH's cost as Eq. 10 reads: one more RTT ({rtt:g} ms) and the m ≈ γ(1 − α) mismatches' "
        f"hidden states when a round has any, against FH's γ hidden states ({fh_ms:.0f} ms at "
        f"γ = {GAMMAS[-1]}, {rate:g} Mbit/s): at large γ FH's payload costs more than SH's "
        "round trip; the paper's Fig. 4 numbers are not given to see where its SH pays more",
    )


def v4_rows(res: WisvResults) -> list[ClaimRow]:
    head = head_reason(res)
    rows = []
    stated = {
        (50.0, 20.0): ("SH slower than FH", "SH > FH at every γ", None),
        (50.0, 500.0): ("SH slower than FH", "SH > FH at every γ", None),
        (5.0, 20.0): ("FH slightly slower than SH at large windows", "SH < FH at γ ≥ 32", 32),
    }
    unstated = " / ".join(pct(d) for d in _signs(res, 500.0, 5.0, "sh", "fh"))
    for (rtt, rate), (paper, tolerance, large) in stated.items():
        diffs = _signs(res, rate, rtt, "sh", "fh")
        if large is None:
            ok = all(d > 0 for d in diffs)
            note, reason = "(SH − FH) / FH per window", sh_cost_reason(res, rate, rtt)
        else:
            ok = all(d < 0 for g, d in zip(GAMMAS, diffs, strict=True) if g >= large)
            note = f"(SH − FH) / FH per window; at 500 Mbit/s (no claim): {unstated}"
            reason = head
        rows.append(ClaimRow(
            "V4", f"Fig. 4, RTT {rtt:g} ms, {rate:g} Mbit/s: sign of SH − FH latency, γ = "
            + "/".join(str(g) for g in GAMMAS),
            paper, " / ".join(pct(d) for d in diffs), tolerance, ok, None,
            note=note, reason=reason,
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


def fig5_rows(res: WisvResults) -> list[ClaimRow]:
    if not res.ablation:
        missing = (
            f"not judged: edgespec/data/wisv/{ABLATION_TABLE}-acceptance.json (the head "
            "trained without the CSI-aware relabelling) does not exist; `edgespec train "
            "wisv --no-relabel` writes it"
        )
        return [
            ClaimRow("Fig. 5", f"head without relabelling, 20 Mbit/s: {what}", paper, "—",
                     "direction", None, None, note=missing)
            for what, paper in (("lower AAL", "lower"), ("higher latency", "higher"))
        ]  # fmt: skip
    shares = res.shares.get(ABLATION_TABLE, {})
    reason = Reason(
        Cause.MISSING_INPUT,
        "the paper's two heads: the Gemma 3 270M pair's head without relabelling rejects "
        + ", ".join(f"{v:.3f} on {k}" for k, v in shares.items())
        + " at T = 12",
    )
    rows = []
    for metric, better, what in (("AAL", -1, "lower AAL"), ("latency", +1, "higher latency")):
        ablated = [_value(res.get(ABLATION, g, 20.0), metric) for g in GAMMAS]
        full = [_value(res.get("fh", g, 20.0), metric) for g in GAMMAS]
        ok = all((a - f) * better > 0 for a, f in zip(ablated, full, strict=True))
        rows.append(ClaimRow(
            "Fig. 5", f"head without relabelling, 20 Mbit/s: {what} (WISV FH, RTT 50 ms)",
            what + " (no numbers)", f"{_series(ablated)} vs {_series(full)}",
            "every γ", ok, None, reason=reason,
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
