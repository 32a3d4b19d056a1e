"""V4's rows against heads with a constant reject share, in expected values: a row is
marked by construction exactly when no share the heads can give turns it, and what the
marks say (computed from the model) holds."""

from __future__ import annotations

import math

from edgespec.core.semantic_link import LinkRates, fh_comm_s, greedy_comm_s, sh_comm_s
from edgespec.reproduce.claims import Cause, ClaimRow, Outcome
from edgespec.reproduce.wisv.expected import heads_range, round_s
from edgespec.reproduce.wisv.head_tables import HeadTable
from edgespec.reproduce.wisv.regimes import expected_gaps, head_free, v4_rows
from edgespec.reproduce.wisv.runs import ABLATION, WisvPlan, WisvResults, WisvRunSummary, run_name
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

TOKENS_PER_ANSWER = 208.0
SHARES = [i / 20 for i in range(21)]  # 0 … 1
"""The constant reject shares planted (the reviewer's probe: 0, 0.5 and 1 among them)."""
QUALITIES = (0.4337, 0.8997)
"""The bundled tables' channels' κ (20 and 500 Mbit/s)."""
SIGN_ROW = "Fig. 4, RTT {rtt} ms, {rate} Mbit/s: sign of SH − FH latency, γ = 10/16/24/32/64"
FH_ROW = "WISV FH faster than greedy in every Fig. 4 setting (4 scenarios × 5 windows)"
SH_ROW = "RTT 50 ms: WISV SH slightly slower than greedy"


def _round_s(method: str, gamma: int, rate: float, rtt: float) -> float:
    """A round's expected time, written out apart from :func:`round_s`: the drafts and the
    method's link cost (SH's second round trip in the rounds with m > 0 mismatches,
    m ~ Binomial(γ, 1 − α))."""
    setup = WisvSetup()
    p, alpha, link = setup.payloads(), setup.alpha, LinkRates(rate * 1e6, rtt / 1000)
    draft = gamma * setup.draft_s_per_token
    if method == "fh":
        return draft + fh_comm_s(p, link, gamma)
    if method == "sh":
        return draft + sum(
            math.comb(gamma, m) * (1 - alpha) ** m * alpha ** (gamma - m)
            * sh_comm_s(p, link, gamma, m)
            for m in range(gamma + 1)
        )  # fmt: skip
    return draft + greedy_comm_s(p, link, gamma)


def planted(share: float, heads: dict[str, tuple[float, float]] | None = None) -> WisvResults:
    """Every run as a head rejecting ``share`` of the mismatches on both links would give,
    in expected values (greedy and rejection sampling: exact verification); the heads'
    tables give ``heads`` (table → shares on the poor and the good channel; default:
    ``share`` on both)."""
    runs = {}
    alpha = WisvSetup().alpha
    for method in (*METHODS, ABLATION):
        wisv = method in ("fh", "sh", ABLATION)
        for g in GAMMAS:
            committed = expected_committed(alpha, share if wisv else 1.0, g)
            rounds = TOKENS_PER_ANSWER / committed
            for rate in RATES_MBPS:
                for rtt in RTTS_MS:
                    latency = rounds * _round_s(method, g, rate, rtt)
                    runs[run_name(method, g, rate, rtt)] = WisvRunSummary(
                        latency, committed, rounds, TOKENS_PER_ANSWER / latency, 500,
                        committed - 1,
                    )  # fmt: skip
    ends = heads or {TABLE: (share, share)}
    shares = {name: {"20 Mbit/s": p, "500 Mbit/s": g} for name, (p, g) in ends.items()}
    tables = {name: HeadTable(pair, QUALITIES) for name, pair in ends.items()}
    counts = dict.fromkeys(ends, 921)
    return WisvResults(WisvPlan.full(), runs, shares, True, counts, tables)


def _rows(res: WisvResults) -> dict[str, ClaimRow]:
    return {r.what: r for r in v4_rows(res)}


SHIPPED = {TABLE: (0.1194, 0.2714), ABLATION_TABLE: (0.329, 0.3344)}
"""The bundled heads' shares at T = 12 on their poor and good channels."""


def test_with_the_bundled_heads_every_v4_row_is_decided_by_the_model() -> None:
    """No share the bundled heads give (0.119–0.334, ±2 standard errors) turns a V4 row:
    four are shown by construction, the one that cannot pass with its cause named, and
    the RTT 50 ms, 20 Mbit/s sign is a setting (the reading of "large windows" turns it)."""
    res = planted(0.2, SHIPPED)
    rows = _rows(res)
    late_row = rows[SIGN_ROW.format(rtt=50, rate=20)]
    assert late_row.outcome is Outcome.SETTING
    assert all(r.outcome is Outcome.BY_CONSTRUCTION for r in rows.values() if r is not late_row)
    span = heads_range(res)
    assert span is not None
    assert (round(span.low, 3), round(span.high, 3)) == (0.119, 0.334)
    assert (round(span.wide_low, 3), round(span.wide_high, 3)) == (0.098, 0.365)
    late = late_row.note
    assert "; a miss at every reject share (a modelling difference): " in late
    assert "+0.2% / -3.3% at γ = 10/16/24/32/64, against the stated sign at γ = 32" in late
    assert late.endswith(
        "That reading (γ ≥ 32) is a chosen input (REPORT.md's chosen inputs): read as γ ≥ 64 "
        "the row would hold"
    )
    fh = rows[FH_ROW].by_construction
    assert fh.startswith("the same side in every setting at every share of the heads: ")
    assert "0.819 (RTT 5 ms, 20 Mbit/s, γ = 10)" in fh and "0.098–0.365" in fh
    sh = rows[SH_ROW].by_construction
    assert sh.startswith(
        "a miss at every share of the heads (the paper is inconsistent with itself): faster at "
        "10 of 10 settings whatever the head: faster than greedy below its break-even reject "
        "share and slower above, 0.703 (RTT 50 ms, 20 Mbit/s, γ = 10)"
    )


def _verdicts(share: float, what: str) -> bool | None:
    """``what``'s direction verdict on the planted runs at ``share``."""
    return _rows(planted(share))[what].direction_ok


def test_a_row_is_by_construction_exactly_when_no_share_of_the_heads_turns_it() -> None:
    """For a head of every constant share from 0 to 1 (its range that share ± 2 standard
    errors over 921 mismatches), the rows judged are those whose verdict a share within the
    range turns, and the rows marked by construction keep theirs over it."""
    judged_somewhere = set()
    for share in SHARES:
        res = planted(share)
        span = heads_range(res)
        assert span is not None
        ends = (span.wide_low, share, span.wide_high)
        for what, row in _rows(res).items():
            seen = {_verdicts(x, what) for x in ends}
            if row.by_construction or row.setting:  # the setting: a reading turns it
                assert len(seen) == 1, (what, share)
            else:
                assert len(seen) == 2, (what, share)
                judged_somewhere.add(what)
    # FH and SH against greedy turn near their break-even shares (0.70–0.997); the signs
    # of SH − FH turn at none.
    assert judged_somewhere == {FH_ROW, SH_ROW}


def test_the_sign_rows_are_the_same_at_every_share() -> None:
    """SH and FH commit the same tokens a round: the RTT 50 ms, 20 Mbit/s row misses at
    every share at the chosen reading (SH 0.2 % slower at γ = 32), a setting, and the
    other two hold at every share."""
    for share in SHARES:
        rows = _rows(planted(share))
        for rtt, rate, ok in ((50, 20, False), (50, 500, True), (5, 20, True)):
            row = rows[SIGN_ROW.format(rtt=rtt, rate=rate)]
            kind = Outcome.SETTING if rate == 20 and rtt == 50 else Outcome.BY_CONSTRUCTION
            assert row.outcome is kind and row.direction_ok is ok
    row = _rows(planted(0.5))[SIGN_ROW.format(rtt=50, rate=20)]
    assert row.reason is not None and row.reason.cause is Cause.MODELLING


def test_what_head_free_says_holds() -> None:
    """The expected round times behind the sign rows, against the ones written out here."""
    res = planted(0.5)
    for rtt in RTTS_MS:
        for rate in RATES_MBPS:
            mine = [_round_s("sh", g, rate, rtt) / _round_s("fh", g, rate, rtt) - 1 for g in GAMMAS]
            ours = expected_gaps(res, rtt, rate)
            assert [round(x, 12) for x in ours] == [round(x, 12) for x in mine]
            for g in GAMMAS:
                for method in ("fh", "sh", "greedy"):
                    theirs = round_s(WisvSetup(), method, g, rate, rtt)
                    assert math.isclose(theirs, _round_s(method, g, rate, rtt))
    assert "+13.3% / +11.3% / +8.8% / +7.1% / +3.7%" in head_free(res, 50.0, 500.0)
    assert "-5.4% / -5.8% / -6.2% / -6.4% / -6.8%" in head_free(res, 5.0, 20.0)
    late = _round_s("sh", 32, 20.0, 50.0) / _round_s("fh", 32, 20.0, 50.0) - 1
    assert round(100 * late, 1) == 0.2


def test_without_the_heads_tables_the_share_rows_are_judged() -> None:
    """A run whose tables do not say what shares they give elsewhere (or how many
    mismatches they come from) has no range to decide over: FH and SH against greedy are
    judged, as on the planted numbers (FH ahead everywhere, SH ahead of greedy)."""
    res = planted(0.2)
    bare = WisvResults(res.plan, res.runs, res.shares, True, res.mismatches)
    rows = _rows(bare)
    assert rows[FH_ROW].outcome is Outcome.HOLDS
    assert rows[SH_ROW].outcome is Outcome.MISS and rows[SH_ROW].cause is Cause.INCONSISTENT
