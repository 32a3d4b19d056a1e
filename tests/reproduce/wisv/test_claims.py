"""WISV's rows on made-up run summaries: which rows are decided by the model's construction,
when a direction that is only the sign of two reject shares is judged, and Fig. 4's
SH − FH signs as the paper's text states them."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from itertools import pairwise

from edgespec.core.semantic_link import (
    LinkRates,
    fh_comm_s,
    greedy_comm_s,
    rejection_comm_s,
    sh_comm_s,
)
from edgespec.reproduce.claims import Cause, ClaimRow, Outcome
from edgespec.reproduce.wisv.claims import (
    CUT_GROWS,
    FASTER,
    GAIN_GROWS,
    MORE_PER_ROUND,
    SLOWEST,
    v1_rows,
    v2_rows,
    v3_rows,
)
from edgespec.reproduce.wisv.head_tables import HeadTable
from edgespec.reproduce.wisv.heads import fig5_rows, permissive_row
from edgespec.reproduce.wisv.regimes import v4_rows
from edgespec.reproduce.wisv.runs import (
    ABLATION,
    WisvPlan,
    WisvResults,
    WisvRunSummary,
    run_name,
)
from edgespec.reproduce.wisv.setup import (
    ABLATION_TABLE,
    GAMMAS,
    METHODS,
    RATES_MBPS,
    RTTS_MS,
    TABLE,
    WisvSetup,
)
from edgespec.sim.model.semantic import expected_committed

Latency = Callable[[str, int, float, float], float]
"""(method, γ, Mbit/s, RTT ms) → latency per answer, s."""


def _greedy_aal(gamma: int) -> float:
    return (1 - 0.9 ** (gamma + 1)) / 0.1


def _aal(method: str, gamma: int, rate: float) -> float:
    """Committed per round: WISV's above greedy's, more on the poor link; the head
    without relabelling below WISV's."""
    scale = {"fh": 1.5, "sh": 1.5, ABLATION: 1.2}.get(method, 1.0)
    return _greedy_aal(gamma) * scale * (1.01 if rate == 20.0 and scale > 1 else 1.0)


def _latency(method: str, gamma: int, rate: float, rtt: float) -> float:
    per_round = gamma * 0.01891 + rtt / 1000 + (0.01 if method == "sh" else 0.0)
    return 208 / _aal(method, gamma, rate) * per_round


def results(
    shares: dict[str, dict[str, float]],
    mismatches: dict[str, int],
    latency: Latency = _latency,
    heads: dict[str, HeadTable] | None = None,
) -> WisvResults:
    runs = {}
    for method in (*METHODS, ABLATION):
        for g in GAMMAS:
            for rate in RATES_MBPS:
                for rtt in RTTS_MS:
                    aal, lat = _aal(method, g, rate), latency(method, g, rate, rtt)
                    runs[run_name(method, g, rate, rtt)] = WisvRunSummary(
                        lat, aal, 208 / aal, 208 / lat, 500, aal - 1
                    )
    return WisvResults(WisvPlan.full(), runs, shares, True, mismatches, heads or {})


SHIPPED = {
    TABLE: {"20 Mbit/s": 0.119, "500 Mbit/s": 0.271},
    ABLATION_TABLE: {"20 Mbit/s": 0.329, "500 Mbit/s": 0.3344},
}
"""The two bundled heads' reject shares at T = 12 (edgespec/data/wisv/)."""
COUNTS = {TABLE: 921, ABLATION_TABLE: 921}


def by_what(rows: list[ClaimRow]) -> dict[str, ClaimRow]:
    return {r.what: r for r in rows}


def test_the_gains_growing_with_the_window_hold_by_construction() -> None:
    res = results(SHIPPED, COUNTS)
    v1, v2 = by_what(v1_rows(res)), by_what(v2_rows(res))
    for rate in ("20", "500"):
        row = v1[f"WISV FH's AAL gain over greedy grows with γ, {rate} Mbit/s"]
        assert row.outcome is Outcome.BY_CONSTRUCTION
        assert row.by_construction == GAIN_GROWS
    cut = v2["WISV FH's latency reduction over greedy grows with γ, 500 Mbit/s"]
    assert cut.outcome is Outcome.BY_CONSTRUCTION and cut.by_construction == CUT_GROWS
    assert GAIN_GROWS.endswith("rise with γ for every r < 1 (a ratio of geometric sums whose "
                               "terms' ratio grows)")  # fmt: skip


def test_the_headline_changes_at_64_are_judged_on_their_magnitude_alone() -> None:
    """Their sign cannot come out otherwise (MORE_PER_ROUND, FASTER): not judged; a
    magnitude outside ±25 % is then a miss, not "direction only"."""
    res = results(SHIPPED, COUNTS)
    v1, v2 = by_what(v1_rows(res)), by_what(v2_rows(res))
    aal = v1["WISV FH AAL vs greedy, γ = 64, 20 Mbit/s"]
    latency = v2["WISV FH latency vs greedy, γ = 64, 500 Mbit/s"]
    assert aal.note == f"direction not judged, by construction: {MORE_PER_ROUND}"
    assert latency.note == f"direction not judged, by construction: {FASTER}"
    assert (aal.tolerance, aal.ours) == ("±25 % of +60.7%", "15.134 vs 9.989 (+51.5%)")
    # the tolerance is Table I's change; the paper's text rounds it to +60.8 %, shown beside
    assert aal.paper == "17.343 vs 10.789 (+60.7%; the text prints +60.8%)"
    assert aal.direction_ok is None and aal.outcome is Outcome.HOLDS  # within ±25 %
    assert latency.direction_ok is None and latency.outcome is Outcome.HOLDS  # −33 % vs −31 %
    # a head that commits 3× greedy's at γ = 64: +200 % AAL, −67 % rounds, both misses
    fh = res.get("fh", 64, 20.0)
    far = replace(fh, committed_per_round=3 * 9.989, rounds_per_answer=208 / (3 * 9.989))
    res.runs[run_name("fh", 64, 20.0, 50.0)] = far
    rows = by_what(v1_rows(res))
    for what in ("AAL", "rounds"):
        row = rows[f"WISV FH {what} vs greedy, γ = 64, 20 Mbit/s"]
        assert (row.direction_ok, row.magnitude_ok, row.outcome) == (None, False, Outcome.MISS)
        assert row.cause is Cause.MISSING_INPUT
        assert row.why.startswith("an input the paper does not give — the paper's decision head")


def test_the_poor_link_more_permissive_is_judged_on_a_gap_beyond_noise() -> None:
    res = results(SHIPPED, COUNTS)
    row = permissive_row(res)
    # WISV's CSI-aware head: 0.271 − 0.119 over 921 mismatches each is 8.4 standard errors.
    assert row.outcome is Outcome.HOLDS
    assert row.note == (
        "the head's reject share, 500 − 20 Mbit/s: 0.271 − 0.119 = +0.152, +8.4 standard errors"
    )
    # The head without relabelling: 0.3344 − 0.329, 0.25 standard errors. The simulated
    # AAL is higher on the poor link all the same, but it only follows the shares' sign.
    noise = {TABLE: SHIPPED[ABLATION_TABLE], ABLATION_TABLE: SHIPPED[ABLATION_TABLE]}
    row = permissive_row(results(noise, COUNTS))
    assert row.outcome is Outcome.NOT_JUDGED and row.direction_ok is None
    assert row.note == (
        "not judged: the reject shares differ by 0.334 − 0.329 = +0.005, +0.2 standard "
        "errors (needs more than 2), and the simulated AAL only follows their sign"
    )
    # A table that does not say how many mismatches its shares come from: not judged.
    row = permissive_row(results(SHIPPED, {}))
    assert row.outcome is Outcome.NOT_JUDGED
    assert row.note.endswith("the table does not say how many mismatches it comes from "
                             "(needs more than 2), and the simulated AAL only follows their "
                             "sign")  # fmt: skip


def test_fig5_compares_the_head_without_relabelling_with_wisvs() -> None:
    rows = fig5_rows(results(SHIPPED, COUNTS))
    assert [r.outcome for r in rows] == [Outcome.HOLDS, Outcome.HOLDS]
    assert rows[0].note == (
        "reject share at 20 Mbit/s, without − with relabelling: 0.329 − 0.119 = +0.210, "
        "+11.2 standard errors"
    )
    same = {TABLE: {"20 Mbit/s": 0.33, "500 Mbit/s": 0.33}, ABLATION_TABLE: SHIPPED[ABLATION_TABLE]}
    assert [r.outcome for r in fig5_rows(results(same, COUNTS))] == [Outcome.NOT_JUDGED] * 2


def _sh_vs_fh(at_rtt50_20: list[float]) -> Latency:
    """FH's latency as :func:`_latency`; SH's off it by ``at_rtt50_20`` per window at RTT
    50 ms and 20 Mbit/s, 5 % slower at 500 Mbit/s, 5 % faster at RTT 5 ms."""

    def latency(method: str, gamma: int, rate: float, rtt: float) -> float:
        fh = _latency("fh", gamma, rate, rtt)
        if method != "sh":
            return _latency(method, gamma, rate, rtt)
        if rtt == 5.0:
            return fh * 0.95
        if rate == 500.0:
            return fh * 1.05
        return fh * (1 + at_rtt50_20[GAMMAS.index(gamma)])

    return latency


def test_at_rtt_50_ms_and_20_mbits_the_reading_of_large_windows_decides_the_sign() -> None:
    """The row as the paper words it (SH slower below γ = 32, faster from it): its verdict
    turns on where "large windows" begin, an input the paper does not give, so it is a
    setting naming the readings that turn it (it was shown by construction, its miss
    labelled a modelling difference). The measured verdict is still shown, and the note
    keeps why no head changes it: SH and FH commit the same tokens a round."""
    what = "Fig. 4, RTT 50 ms, 20 Mbit/s: sign of SH − FH latency, γ = 10/16/24/32/64"
    crossing = _sh_vs_fh([0.07, 0.05, 0.02, -0.01, -0.03])
    late = _sh_vs_fh([0.072, 0.047, 0.022, 0.004, -0.03])
    said = {
        True: 'the reading of "large windows" decides it: read as γ ≥ 32 (chosen) the row '
        "holds, as γ ≥ 10 or 16 or 24 or 64 it misses",
        False: 'the reading of "large windows" decides it: read as γ ≥ 32 (chosen) the row '
        "misses, as γ ≥ 64 it holds",
    }
    for latency, measured in ((crossing, True), (late, False)):
        row = by_what(v4_rows(results(SHIPPED, COUNTS, latency)))[what]
        assert row.outcome is Outcome.SETTING and row.direction_ok is measured
        assert (row.setting, row.by_construction) == (said[measured], "")
        assert row.tolerance == "SH > FH at γ < 32, SH < FH at γ ≥ 32"
        assert row.paper == (
            "SH slower than FH (RTT 50 ms), but FH slightly slower than SH at large windows "
            "(20 Mbit/s)"
        )
        assert "a miss at every reject share" in row.note
        assert (
            "at γ = 32, 20 Mbit/s, FH's take 52 ms and SH's round trip with its ≈3.2 states 55 ms"
            in row.note
        )


def test_what_the_by_construction_reasons_say_holds_for_every_share() -> None:
    """GAIN_GROWS and CUT_GROWS in expected values: the gain rises with γ for every share
    below 1, FH's hidden states add under 0.4 % to a round at 500 Mbit/s, and the cut
    grows at both RTTs for every share up to 0.995."""
    p = WisvSetup().payloads()
    per_token = WisvSetup().draft_s_per_token
    for share in [i / 200 for i in range(200)]:  # 0 … 0.995
        gain = [expected_committed(0.9, share, g) / expected_committed(0.9, 1.0, g) for g in GAMMAS]
        assert all(b > a for a, b in pairwise(gain))
        for rtt in RTTS_MS:
            link = LinkRates(500e6, rtt / 1000)
            cut = []
            for g, ratio in zip(GAMMAS, gain, strict=True):
                greedy = g * per_token + greedy_comm_s(p, link, g)
                fh = g * per_token + fh_comm_s(p, link, g)
                assert fh / greedy - 1 < 0.004
                cut.append(fh / greedy / ratio)
            assert all(b < a for a, b in pairwise(cut)), (share, rtt)


def test_rejection_sampling_the_slowest_holds_by_construction() -> None:
    (row,) = [r for r in v3_rows(results(SHIPPED, COUNTS)) if "the slowest method" in r.what]
    assert row.outcome is Outcome.BY_CONSTRUCTION and row.setting == ""
    assert row.by_construction == SLOWEST


def test_what_slowest_says_holds_for_every_share() -> None:
    """SLOWEST in expected values: at every reject share, in every Fig. 4 setting, rejection
    sampling's answer takes longer than greedy's, FH's and SH's (SH's second round trip in
    the rounds with m > 0 mismatches, m ~ Binomial(γ, 0.1)); the nearest case is γ = 10,
    500 Mbit/s, RTT 50 ms, every mismatch rejected, 3.1 % apart."""
    setup = WisvSetup()
    p, alpha = setup.payloads(), setup.alpha
    margins = {}
    for rate in RATES_MBPS:
        for rtt in RTTS_MS:
            link = LinkRates(rate * 1e6, rtt / 1000)
            for g in GAMMAS:
                draft = g * setup.draft_s_per_token
                sh_extra = sum(
                    math.comb(g, m) * 0.1**m * 0.9 ** (g - m) * (sh_comm_s(p, link, g, m)
                                                                 - greedy_comm_s(p, link, g))
                    for m in range(1, g + 1)
                )  # fmt: skip
                greedy = (draft + greedy_comm_s(p, link, g)) / expected_committed(alpha, 1.0, g)
                reject = (draft + rejection_comm_s(p, link, g)) / expected_committed(alpha, 1.0, g)
                for share in [i / 100 for i in range(101)]:
                    committed = expected_committed(alpha, share, g)
                    fh = (draft + fh_comm_s(p, link, g)) / committed
                    sh = (draft + greedy_comm_s(p, link, g) + sh_extra) / committed
                    margins[(rate, rtt, g, share)] = reject / max(greedy, fh, sh) - 1
    nearest = min(margins, key=margins.__getitem__)
    assert nearest == (500.0, 50.0, 10, 1.0)
    assert round(100 * margins[nearest], 1) == 3.1


QUALITIES = (0.4337, 0.8997)
HEADS = {
    TABLE: HeadTable((0.1194, 0.2714), QUALITIES, "kappa-critical", (0.2477, 0.5138)),
    ABLATION_TABLE: HeadTable((0.329, 0.3344), QUALITIES, "keep-critical", (0.5711, 0.5711)),
}
"""What the two bundled tables record of their labels (edgespec/data/wisv/)."""


def test_a_sign_our_label_rule_fixes_is_shown_by_construction() -> None:
    """WISV's labels repair at most B(κ) = κ·n_c critical mismatches, fewer on the poor
    channel, and never more than the base labels (a_j ≤ y_j): the poor link's lower share
    and the head without relabelling's higher one are the label rule's, not the system's."""
    res = results(SHIPPED, COUNTS, heads=HEADS)
    permissive, *fig5 = [permissive_row(res), *fig5_rows(res)]
    assert [r.outcome for r in (permissive, *fig5)] == [Outcome.BY_CONSTRUCTION] * 3
    assert permissive.by_construction == (
        "our label rule decides it: a repair is a rejection, and relabel.py's targets "
        "y_j σ((s_j − μ)/T) ≤ y_j rise pointwise with the repair budget B(κ, n_c); B/n_c is "
        "0.900 for gemma3-270m-kappa-critical on the good channel (κ 0.900, budget "
        "kappa-critical) against 0.434 for gemma3-270m-kappa-critical on the poor channel "
        "(κ 0.434, budget kappa-critical), so the labels reject 0.514 against 0.248 of "
        "held-out mismatches, and the heads learnt them (0.271 against 0.119 at T = 12): the "
        "row shows whether a classifier learnt its labels, not the system's behaviour"
    )
    assert "B/n_c is 1.000 for gemma3-270m on the poor channel" in fig5[0].by_construction
    assert "the labels reject 0.571 against 0.248" in fig5[1].by_construction


def test_labels_that_do_not_order_the_shares_leave_the_sign_judged() -> None:
    """Labels that do not read the channel, labels recorded against their budget's order,
    or a budget relabel.py does not name: the sign is judged on the shares' gap."""
    flat = dict(HEADS, **{TABLE: HEADS[ABLATION_TABLE]})
    assert permissive_row(results(SHIPPED, COUNTS, heads=flat)).outcome is Outcome.HOLDS
    against = dict(HEADS, **{TABLE: replace(HEADS[TABLE], label_shares=(0.6, 0.5))})
    assert permissive_row(results(SHIPPED, COUNTS, heads=against)).outcome is Outcome.HOLDS
    unknown = dict(HEADS, **{TABLE: replace(HEADS[TABLE], budget="half")})
    rows = [permissive_row(results(SHIPPED, COUNTS, heads=unknown))]
    rows += fig5_rows(results(SHIPPED, COUNTS, heads=unknown))
    assert [r.outcome for r in rows] == [Outcome.HOLDS] * 3
