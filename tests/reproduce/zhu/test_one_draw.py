"""A quick run's few Monte-Carlo draws: no spread is printed for one (a spread of one draw
says nothing); Z1's pipeline against Fig. 6's axes is shown for scale and never judged
(the figure prints no numbers; ADS's side of the axis is its batch limit's:
test_decided_verdicts)."""

from __future__ import annotations

from edgespec.reproduce.claims import Outcome
from edgespec.reproduce.zhu.claims import z3_rows
from edgespec.reproduce.zhu.coverage import coverage
from edgespec.reproduce.zhu.fig6_claims import z1_rows
from edgespec.reproduce.zhu.runs import ZhuPlan, sweep_key
from edgespec.reproduce.zhu.setup import PAIRS, ZhuSetup

QUICK = "1 Monte-Carlo draw(s) instead of 20"
PLAN = ZhuPlan(1, (0.5, 0.9), (90,), (1792,), (1024,), (25.0,), 0, 5)


def _fig6_draw(proposed_s: float) -> dict[str, float]:
    schemes = {"proposed": proposed_s, "ads": 400.0, "ads@fastest": 90.0, "ads@slowest": 900.0}
    return {
        f"fig6/{pair}/alpha={a}/{scheme}": value + (a if scheme == "proposed" else 0.0)
        for pair in PAIRS
        for a in PLAN.alphas
        for scheme, value in schemes.items()
    }


def test_z1_s_axes_row_is_not_judged_in_a_full_run_nor_a_quick_one() -> None:
    """The pipeline against Fig. 6's axes: the figure prints no numbers, so the row is for
    scale only, whichever side of the axis the medians lie (a full run's missed, a quick
    run's was marked as the run length's)."""
    cov = coverage(ZhuSetup(), PLAN)
    # the (LLaMA-68M, LLaMA-7B) pipeline's median above its 150 s axis, one draw's inside it
    draws = [_fig6_draw(160.0), _fig6_draw(120.0), _fig6_draw(170.0)]
    full = z1_rows(draws, PLAN, cov)[3]
    assert (full.magnitude_ok, full.outcome, full.note) == (
        None, Outcome.NOT_JUDGED, "for scale: beyond the axes",
    )  # fmt: skip
    quick = z1_rows(draws[1:2], PLAN, cov, QUICK)[3]
    assert (quick.outcome, quick.note) == (Outcome.NOT_JUDGED, "for scale: inside the axes")


def _sweep_draw(gain: float) -> dict[str, float]:
    setup = ZhuSetup()
    keys = (sweep_key("K", 90, setup), sweep_key("I_max", 1792, setup),
            sweep_key("O_max", 1024, setup))  # fmt: skip
    draw = {}
    for key in keys:
        for scheme in ("max_batching", "heuristic_batching", "static_batching", "ads"):
            draw[f"sweep/{key}/{scheme}"] = 100.0
            draw[f"sweep/{key}/{scheme}@fastest"] = 100.0
            draw[f"sweep/{key}/{scheme}@slowest"] = 100.0
        draw[f"sweep/{key}/proposed"] = 100.0 * (1.0 - gain)
    return draw


def test_a_reduction_from_one_draw_prints_no_spread() -> None:
    setup, cov = ZhuSetup(), coverage(ZhuSetup(), PLAN)
    (one, *_) = z3_rows([_sweep_draw(0.3)], setup, PLAN, QUICK, cov)
    assert one.ours == "+30.0%"
    assert one.note == "per draw 10–90 %: 1 draw, no spread; of the mean latencies +30.0%"
    (two, *_) = z3_rows([_sweep_draw(0.1), _sweep_draw(0.3)], setup, PLAN, "", cov)
    assert two.note == "per draw 10–90 %: +12.0% to +28.0%; of the mean latencies +20.0%"
