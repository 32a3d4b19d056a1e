"""A quick run's few Monte-Carlo draws: no spread is printed for one (a spread of one draw
says nothing), and Z1's magnitude (inside Fig. 6's axes) is marked as the quick run's, not
compared with the paper's, where some draw's ADS lies inside the axis (where none does, the
unstated ADS batch limit is the cause: test_known_errors)."""

from __future__ import annotations

from edgespec.reproduce.claims import Cause, Outcome
from edgespec.reproduce.zhu.claims import z1_rows, z3_rows
from edgespec.reproduce.zhu.coverage import coverage
from edgespec.reproduce.zhu.runs import ZhuPlan, sweep_key
from edgespec.reproduce.zhu.setup import PAIRS, ZhuSetup

QUICK = "1 Monte-Carlo draw(s) instead of 20"
PLAN = ZhuPlan(1, (0.5, 0.9), (90,), (1792,), (1024,), (25.0,), 0, 5)


def _fig6_draw(proposed_s: float, ads_s: float) -> dict[str, float]:
    return {
        f"fig6/{pair}/alpha={a}/{scheme}": value
        for pair in PAIRS
        for a in PLAN.alphas
        for scheme, value in (("proposed", proposed_s + a), ("ads", ads_s))
    }


def test_z1_s_magnitude_from_one_draw_is_marked_as_the_quick_run_s() -> None:
    cov = coverage(ZhuSetup(), PLAN)
    # ADS's median above the 150 s axis of (LLaMA-68M, LLaMA-7B), one draw's inside it
    draws = [_fig6_draw(120.0, 400.0), _fig6_draw(120.0, 140.0)]
    full = z1_rows(draws, PLAN, cov)[0]
    assert (full.magnitude_ok, full.outcome) == (False, Outcome.DIRECTION_ONLY)
    quick = z1_rows(draws, PLAN, cov, QUICK)[0]
    assert quick.verdict == "direction ✓, magnitude – (quick run)"
    assert quick.outcome is Outcome.DIRECTION_ONLY and quick.cause is Cause.QUICK_RUN
    assert quick.why == f"{Cause.QUICK_RUN.value} — {QUICK}"


def _sweep_draw(gain: float) -> dict[str, float]:
    setup = ZhuSetup()
    keys = (sweep_key("K", 90, setup), sweep_key("I_max", 1792, setup),
            sweep_key("O_max", 1024, setup))  # fmt: skip
    draw = {}
    for key in keys:
        for scheme in ("max_batching", "heuristic_batching", "static_batching", "ads"):
            draw[f"sweep/{key}/{scheme}"] = 100.0
        draw[f"sweep/{key}/proposed"] = 100.0 * (1.0 - gain)
    return draw


def test_a_reduction_from_one_draw_prints_no_spread() -> None:
    setup, cov = ZhuSetup(), coverage(ZhuSetup(), PLAN)
    (one, *_) = z3_rows([_sweep_draw(0.3)], setup, PLAN, QUICK, cov)
    assert one.ours == "+30.0%"
    assert one.note == "per draw 10–90 %: 1 draw, no spread; of the mean latencies +30.0%"
    (two, *_) = z3_rows([_sweep_draw(0.1), _sweep_draw(0.3)], setup, PLAN, "", cov)
    assert two.note == "per draw 10–90 %: +12.0% to +28.0%; of the mean latencies +20.0%"
