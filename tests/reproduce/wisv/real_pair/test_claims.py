"""V5 and V6's claim rows on hand-made results (no models): a paper-shaped run holds
everywhere, a collapsing one misses with the pair's cause, and each shape check's edges."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.reproduce.claims import Cause, ClaimRow, Outcome
from edgespec.reproduce.wisv.real_pair.claims import (
    all_rows,
    chosen_threshold,
    falls,
    rises,
    v5_rows,
)

RATES = {"poor": 20.0, "good": 500.0}


def v5_cell(t: int, channel: str, agreement: float, aal: float, rounds: float,
            prompts: int = 200) -> dict[str, Any]:  # fmt: skip
    return {
        "threshold": t,
        "channel": channel,
        "uplink_mbps": RATES[channel],
        "shared": t == 0,
        "prompts": prompts,
        "agreement": agreement,
        "identical": agreement if t == 0 else 0.5,
        "aal": aal,
        "rounds": rounds,
        "tokens_per_answer": aal * rounds,
        "tokens_per_s": 5.0,
        "latency_s": 1.0,
        "latency_per_token_ms": 100.0,
        "accepted_mismatches": 0.0,
        "exchanges_per_round": 1.0,
        "stopped": 1.0,
        "upload": ["fh"],
    }


def v6_cell(
    rate: float,
    window: int,
    method: str,
    latency: float,
    rounds: float = 10.0,
    agreement: float = 1.0,
    upload: tuple[str, ...] = ("fh",),
) -> dict[str, Any]:
    return {
        "uplink_mbps": rate,
        "window": window,
        "method": method,
        "threshold": 12 if method == "wisv" else 0,
        "prompts": 6,
        "agreement": agreement,
        "latency_s": latency,
        "latency_per_token_ms": 1e3 * latency / 30.0,
        "tokens_per_answer": 30.0,
        "rounds": rounds,
        "upload": list(upload) if method == "wisv" else [],
    }


# Fig. 3 / Table I shaped: flat to 8, −0.5 pt at 12 on the poor channel, AAL gains as in
# Table I at window 10, the poor channel more permissive; V6 gaps growing with γ.
PAPER_AGREEMENT = {
    "poor": {0: 1.0, 4: 1.0, 8: 1.0, 12: 0.995, 14: 0.95, 16: 0.3},
    "good": {0: 1.0, 4: 1.0, 8: 1.0, 12: 1.0, 14: 0.98, 16: 0.3},
}
PAPER_AAL = {
    "poor": {0: 6.607, 4: 6.9, 8: 7.3, 12: 7.805, 14: 8.5, 16: 9.0},
    "good": {0: 6.607, 4: 6.8, 8: 7.1, 12: 7.478, 14: 8.2, 16: 9.0},
}


def results(
    agreement: dict[str, dict[int, float]] = PAPER_AGREEMENT,
    aal: dict[str, dict[int, float]] = PAPER_AAL,
    v6: list[dict[str, Any]] | None = None,
    head: dict[str, Any] | None = None,
    prompts: int = 200,
) -> dict[str, Any]:
    cells = []
    for channel in ("poor", "good"):
        for t, a in agreement[channel].items():
            aal_t = aal[channel][t]
            cells.append(v5_cell(t, channel, a, aal_t, 210.0 / aal_t, prompts))
    if v6 is None:
        v6 = []
        for rate in (172.0, 498.0):
            for window, greedy, wisv in ((4, 5.0, 4.8), (8, 6.0, 5.1), (16, 8.0, 6.0)):
                v6 += [v6_cell(rate, window, "greedy", greedy),
                       v6_cell(rate, window, "wisv", wisv, agreement=0.995)]  # fmt: skip
    return {
        "v5": {"window": 8, "cells": cells},
        "v6": {"link_rtt_ms": 20.0, "cells": v6},
        "head": head or {},
    }


def _by_what(rows: list[ClaimRow], text: str) -> list[ClaimRow]:
    return [r for r in rows if text in r.what]


def test_a_paper_shaped_run_holds_everywhere() -> None:
    rows = all_rows(results())
    assert rows and all(r.outcome in (Outcome.HOLDS, Outcome.BY_CONSTRUCTION) for r in rows), [
        (r.what, r.verdict) for r in rows if r.outcome is not Outcome.HOLDS
    ]
    assert len(_by_what(rows, "T < 9")) == 2 and len(_by_what(rows, "gap grows")) == 2
    assert chosen_threshold(results()) == 12


COLLAPSE = {
    "poor": {0: 1.0, 4: 0.0, 8: 0.0, 12: 0.0, 14: 0.0, 16: 0.0},
    "good": {0: 1.0, 4: 0.5, 8: 0.4, 12: 0.3, 14: 0.2, 16: 0.0},
}
SHIPPED_HEAD = {
    "reject_share": {"poor": [1.0] + [0.26] * 11 + [0.13] * 5, "good": [1.0] + [0.7] * 16},
    "critical_share": 0.6376,
    "labels": "local",
}


def test_a_collapsing_pair_misses_with_the_pairs_cause() -> None:
    """The real pair's shape: agreement gone at any T > 0 on the poor channel. The
    quality rows miss, and with the shipped head's numbers in the results they name the
    pair as the cause; the shape rows still hold."""
    rows = v5_rows(results(COLLAPSE, head=SHIPPED_HEAD, prompts=20))
    low = _by_what(rows, "T < 9")
    drop12 = _by_what(rows, "chosen T = 12")
    assert [r.outcome for r in low + drop12] == [Outcome.MISS] * 4
    for r in low + drop12:
        assert r.cause is Cause.MODELLING
        assert "64% in the head's training set" in r.why and "0.26 poor" in r.why
        assert "the shipped head (local labels, repair budget keep-critical)" in r.why
    assert all(r.outcome is Outcome.HOLDS for r in _by_what(rows, "agreement falls"))
    assert _by_what(rows, "poor channel loses more")[0].outcome is Outcome.HOLDS
    assert "T12 +30 pt" in _by_what(rows, "poor channel loses more")[0].ours
    assert chosen_threshold(results(COLLAPSE)) == 0
    # without the shipped head's numbers (another pair) the cause is not claimed
    plain = _by_what(v5_rows(results(COLLAPSE, prompts=20)), "T < 9")
    assert all(r.reason is None and r.why.startswith("cause not known") for r in plain)


def test_threshold_0_must_be_lossless() -> None:
    agreement = {c: dict(v) for c, v in PAPER_AGREEMENT.items()}
    agreement["poor"][0] = agreement["good"][0] = 0.95
    row = v5_rows(results(agreement))[0]
    assert row.what.startswith("T = 0") and row.outcome is Outcome.MISS
    assert row.ours == "95% of 200 answers agree"


def test_aal_gain_far_above_the_papers_holds_in_direction_with_its_cause() -> None:
    aal = {c: dict(v) for c, v in PAPER_AAL.items()}
    aal["poor"] = {0: 1.93, 4: 5.0, 8: 9.0, 12: 9.0, 14: 9.0, 16: 9.0}
    row = _by_what(v5_rows(results(aal=aal)), "AAL gain at T = 12 over T = 0, poor")[0]
    assert row.outcome is Outcome.DIRECTION_ONLY and row.cause is Cause.MODELLING
    assert "commits 1.93 tokens per round" in row.why and "γ + 1 = 9" in row.why
    assert row.ours == "+366.3% (window 8)"


def test_a_good_channel_more_permissive_than_the_poor_one_misses() -> None:
    aal = {"poor": PAPER_AAL["good"], "good": PAPER_AAL["poor"]}
    row = _by_what(v5_rows(results(aal=aal)), "AAL on the poor channel")[0]
    assert row.outcome is Outcome.MISS and row.direction_ok is False


def test_a_channel_blind_head_names_itself_when_poor_is_not_above_good() -> None:
    """The keep-critical head's reject shares are the same on both channels within 0.006:
    the poor channel's AAL below the good one's is then put down to the head; a head that
    reads the channel (shares 0.26 vs 0.7) leaves the cause unknown."""
    aal = {"poor": PAPER_AAL["good"], "good": PAPER_AAL["poor"]}
    blind = {
        "reject_share": {"poor": [1.0] + [0.6] * 15 + [0.0], "good": [1.0] + [0.606] * 15 + [0.0]}
    }
    row = _by_what(v5_rows(results(aal=aal, head=blind)), "AAL on the poor channel")[0]
    assert row.outcome is Outcome.MISS and row.cause is Cause.MODELLING
    assert "differ by at most 0.006 at T = 4, 8, 12, 14" in row.why
    reading = _by_what(v5_rows(results(aal=aal, head=SHIPPED_HEAD)), "AAL on the poor channel")
    assert reading[0].reason is None


def test_shape_checks_allow_one_answer_or_five_percent_against_the_direction() -> None:
    assert falls([1.0, 1.0, 0.95], 0.05, relative=False)
    assert falls([1.0, 0.9, 0.95, 0.5], 0.05, relative=False)  # up by one answer
    assert not falls([1.0, 0.9, 0.96, 0.5], 0.05, relative=False)
    assert not falls([1.0, 1.0], 0.05, relative=False)  # must end lower
    assert not falls([1.0], 0.05, relative=False)
    assert rises([2.0, 3.0, 2.9, 4.0], 0.05, relative=True)  # down by 3.3%
    assert not rises([2.0, 3.0, 2.8, 4.0], 0.05, relative=True)  # down by 6.7%


@pytest.mark.parametrize("quick", ["", "2 prompts instead of 20"])
def test_a_quick_run_compares_no_magnitude(quick: str) -> None:
    rows = all_rows(results(COLLAPSE, head=SHIPPED_HEAD, prompts=2), quick)
    drop = _by_what(rows, "chosen T = 12, poor")[0]
    if quick:
        assert drop.outcome is Outcome.QUICK and drop.cause is Cause.QUICK_RUN
    else:
        assert drop.outcome is Outcome.MISS and drop.cause is Cause.MODELLING


def test_a_rise_among_mostly_changed_answers_names_the_prompts() -> None:
    """Good channel 20% → 10% → 20% of 20 answers: a rise by two answers, where most
    already differ; the cause names the prompts that agree again (from the runs)."""
    agreement = {c: dict(v) for c, v in COLLAPSE.items()}
    agreement["good"] = {0: 1.0, 4: 0.2, 8: 0.2, 12: 0.1, 14: 0.2, 16: 0.0}
    data = results(agreement, head=SHIPPED_HEAD, prompts=20)
    runs = [{"threshold": 0, "channel": "poor", "prompt": p, "agrees": True} for p in range(20)]
    runs += [
        {"threshold": t, "channel": "good", "prompt": p, "agrees": p in agree}
        for t, agree in ((12, {2}), (14, {2, 15, 18}))
        for p in range(20)
    ]
    data["v5"]["runs"] = runs
    row = _by_what(v5_rows(data), "agreement falls as T grows, good")[0]
    assert row.outcome is Outcome.MISS and row.cause is Cause.MODELLING
    assert "T 12 → 14: prompts [15, 18] agree at 14, not at 12" in row.why
    # a rise while most answers still agree has no known cause
    agreement["good"] = {0: 1.0, 4: 0.6, 8: 0.8, 12: 0.5, 14: 0.4, 16: 0.0}
    data = results(agreement, prompts=20)
    data["v5"]["runs"] = runs
    row = _by_what(v5_rows(data), "agreement falls as T grows, good")[0]
    assert row.outcome is Outcome.MISS and row.reason is None


def _with_tokens(res: dict[str, Any], tokens: dict[int, float], rounds: dict[int, float]) -> None:
    for cell in res["v5"]["cells"]:
        t = int(cell["threshold"])
        cell["tokens_per_answer"], cell["rounds"] = tokens[t], rounds[t]


def test_rounds_that_rise_with_longer_answers_name_the_length_as_the_cause() -> None:
    """The real pair's shape: rounds per answer step up from T 8 to 12 because the answers
    there are longer; rounds per committed token still fall, so the miss names the length.
    With the same rounds and flat answer lengths, rounds per token rise too: no cause."""
    rounds = {0: 18.7, 4: 17.6, 8: 9.1, 12: 10.7, 14: 6.5, 16: 1.0}
    res = results()
    _with_tokens(res, {0: 30.9, 4: 42.2, 8: 26.6, 12: 42.5, 14: 26.6, 16: 9.0}, rounds)
    row = _by_what(v5_rows(res), "rounds per answer fall with T, poor")[0]
    assert row.outcome is Outcome.MISS and row.cause is Cause.MODELLING
    assert "T8 → T12: 9.1 → 10.7 rounds, 26.6 → 42.5 tokens" in row.why
    assert "(0.61, 0.42, 0.34, 0.25, 0.24, 0.11)" in row.why
    flat = results()
    _with_tokens(flat, dict.fromkeys(rounds, 30.0), rounds)
    row = _by_what(v5_rows(flat), "rounds per answer fall with T, poor")[0]
    assert row.outcome is Outcome.MISS and row.why.startswith("cause not known")


def test_equal_channels_do_not_show_the_poor_channel_losing_more() -> None:
    """Fig. 3's poor channel loses more agreement than the good one: the same agreement on
    both at every T is no evidence of it (the row misses), and with a channel-blind head
    the head is named as the cause; one T where the good channel keeps more is enough."""
    same = {"poor": PAPER_AGREEMENT["good"], "good": PAPER_AGREEMENT["good"]}
    blind = {
        "reject_share": {"poor": [1.0] + [0.6] * 15 + [0.0], "good": [1.0] + [0.606] * 15 + [0.0]}
    }
    row = _by_what(v5_rows(results(same, head=blind)), "poor channel loses more")[0]
    assert row.ours == "good − poor: T4 +0 pt, T8 +0 pt, T12 +0 pt, T14 +0 pt"
    assert row.outcome is Outcome.MISS and row.cause is Cause.MODELLING
    assert "differ by at most 0.006 at T = 4, 8, 12, 14" in row.why
    row = _by_what(v5_rows(results(same)), "poor channel loses more")[0]
    assert row.outcome is Outcome.MISS and row.reason is None
    one = {"poor": {**PAPER_AGREEMENT["good"], 14: 0.95}, "good": PAPER_AGREEMENT["good"]}
    row = _by_what(v5_rows(results(one)), "poor channel loses more")[0]
    assert row.outcome is Outcome.HOLDS and row.ours.endswith("T14 +3 pt")


def test_the_agreement_tolerance_says_what_it_means_at_few_prompts() -> None:
    """1 pt is finer than one answer at 20 prompts (5 pt): the row says that no answer may
    change, rather than a tolerance the run cannot resolve."""
    few = {r.what: r.tolerance for r in v5_rows(results(prompts=20))}
    many = {r.what: r.tolerance for r in v5_rows(results(prompts=200))}
    low = "T < 9 ≈ target-only, poor channel (20 Mbit/s)"
    chosen = "drop at the chosen T = 12, poor channel (20 Mbit/s)"
    assert few[low] == "drop ≤ 1 pt at every T < 9: no answer of 20 may change (one is 5 pt)"
    assert few[chosen] == "drop ≤ 1 pt: no answer of 20 may change (one is 5 pt)"
    assert (many[low], many[chosen]) == ("drop ≤ 1 pt at every T < 9", "drop ≤ 1 pt")
