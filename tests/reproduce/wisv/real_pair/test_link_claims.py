"""V5's poor-against-good AAL row and V6's latency rows on planted records: the verdicts
judge the paper's quantities (AAL higher on the poor channel; latency per committed token),
and the adaptive-upload row, an input we set, holds by construction."""

from __future__ import annotations

from typing import Any

from edgespec.reproduce.claims import Cause, Outcome
from edgespec.reproduce.wisv.real_pair.claims import v5_rows, v6_rows
from edgespec.reproduce.wisv.real_pair.link_claims import FIXED_RTT, PER_TOKEN
from tests.reproduce.wisv.real_pair.test_claims import PAPER_AAL, results, v6_cell


def test_a_head_that_ignores_the_channel_does_not_show_poor_above_good() -> None:
    """The paper has 20 Mbit/s above 500 Mbit/s: the same AAL on both channels misses."""
    same = {"poor": PAPER_AAL["good"], "good": PAPER_AAL["good"]}
    (row,) = [r for r in v5_rows(results(aal=same)) if "AAL on the poor channel" in r.what]
    assert row.outcome is Outcome.MISS and row.direction_ok is False
    assert row.what == "AAL on the poor channel above the good one's at the same T (0 < T < 16)"
    assert row.ours == "poor − good: T4 +0.00, T8 +0.00, T12 +0.00, T14 +0.00"
    (row,) = [r for r in v5_rows(results()) if "AAL on the poor channel" in r.what]
    assert row.outcome is Outcome.HOLDS


def _cell(window: int, method: str, latency_s: float, tokens: float, agreement: float) -> Any:
    cell = v6_cell(20.0, window, method, latency_s, agreement=agreement)
    cell["tokens_per_answer"] = tokens
    cell["latency_per_token_ms"] = 1e3 * latency_s / tokens
    return cell


# The quick real-pair run's shape: WISV's answers a few wrong tokens long, so shorter per
# answer but slower per token than greedy SD's full answers.
SHORT_WRONG = [
    cell
    for window, wisv_per_token_ms in ((4, 184.0), (8, 190.0), (16, 200.0))
    for cell in (
        _cell(window, "greedy", 22 * 0.156, 22.0, 1.0),
        _cell(window, "wisv", 6 * wisv_per_token_ms / 1e3, 6.0, 0.0),
    )
]


def test_v6_judges_the_latency_per_token_not_per_answer() -> None:
    rows = v6_rows(results(v6=SHORT_WRONG))
    below, gap = rows[0], rows[1]
    assert below.outcome is Outcome.MISS and below.direction_ok is False
    assert gap.outcome is Outcome.MISS
    # every miss has a cause class: the rounds' times against what they commit
    assert below.cause is Cause.MODELLING and gap.cause is Cause.MODELLING
    assert "γ4 110 vs 343 ms a round, 0.60 vs 2.20 tokens; γ8 114 vs 343" in below.why
    assert below.what == (
        "WISV's latency per token below greedy SD's at every window, 20 Mbit/s, RTT 20 ms"
    )
    assert below.ours == "reduction γ4 -17.9%, γ8 -21.8%, γ16 -28.2%"
    assert below.note == (
        f"{PER_TOKEN}; per answer: γ4 +67.8%, γ8 +66.8%, γ16 +65.0%; tokens per answer: "
        "greedy 22.0, WISV 6.0; agreement: greedy 100%, WISV 0%"
    )
    assert gap.what == "the gap grows with the window (per token), 20 Mbit/s, RTT 20 ms"
    # Answers of the same length: per token is per answer, and a real cut holds.
    planted = ((4, "greedy", 3.4), (4, "wisv", 3.0), (8, "greedy", 3.6), (8, "wisv", 3.0))
    same = [_cell(w, m, latency_s, 22.0, 1.0) for w, m, latency_s in planted]
    below, gap = v6_rows(results(v6=same))[:2]
    assert below.outcome is Outcome.HOLDS and gap.outcome is Outcome.HOLDS


def test_the_adaptive_upload_on_our_fixed_rtt_holds_by_construction() -> None:
    rows = v6_rows(results())
    assert [r.what for r in rows if r.outcome is Outcome.BY_CONSTRUCTION] == [
        "adaptive upload: FH when the handshake RTT > 10 ms (link RTT 20 ms)"
    ]
    (row,) = [r for r in rows if "adaptive upload" in r.what]
    assert row.outcome is Outcome.BY_CONSTRUCTION and row.by_construction == FIXED_RTT
    assert row.verdict == f"by construction: {FIXED_RTT}"


QUICK = "2 prompts instead of 20 (V6: 1 instead of 6)"


def test_a_quick_runs_wall_clock_rows_are_not_comparable() -> None:
    """The reviewer's quick run: one prompt a cell, WISV 96.4 % slower per token than
    greedy at γ = 4 and 75 % faster at 16. Timing one answer on a shared CPU tells no
    direction: both latency rows are not comparable (quick run), their numbers shown."""
    one = [
        dict(_cell(window, method, latency_s, tokens, 1.0), prompts=1)
        for window, method, latency_s, tokens in (
            (4, "greedy", 3.0, 20.0), (4, "wisv", 0.5 * 1.964 * 3.0, 10.0),
            (16, "greedy", 4.0, 20.0), (16, "wisv", 0.5 * 0.25 * 4.0, 10.0),
        )
    ]  # fmt: skip
    rows = v6_rows(results(v6=one), QUICK)
    below, gap = rows[0], rows[1]
    assert below.ours == "reduction γ4 -96.4%, γ16 +75.0%"
    for row in (below, gap):
        assert row.outcome is Outcome.QUICK and row.direction_ok is None, row.what
        assert row.cause is Cause.QUICK_RUN and row.why.startswith(
            f"{Cause.QUICK_RUN.value} — {QUICK}; wall-clock latency of 1 answer a cell on a "
            "shared CPU: too few to tell a direction from timing noise"
        )
    # the same numbers in a full run are judged: a miss with its cause, and a hold
    below, gap = v6_rows(results(v6=one))[:2]
    assert below.outcome is Outcome.MISS and below.cause is Cause.MODELLING
    assert gap.outcome is Outcome.HOLDS
