"""Verdicts that something other than the system's behaviour decides are not counted as
evidence, and the rule that finds them is computed, so it cannot hide a real miss.

* Fig. 7's strict ordering where the pipeline ties SD w/o pipeline by the formula (both
  plans the same single batch: Eq. 21 is then the sequential sum) is shown as by
  construction, not judged; a point whose latencies are merely equal, or unequal, is judged.
  Before, K = 10 was judged and was the quick run's one miss (``not at K=10``).
* Fig. 6's pipeline below ADS, Fig. 8's Static batching worst and proposed below ADS are
  judged only where the verdict is the same over the chosen input's whole range (ADS's batch
  size from 1 task to K, Static's from 1 task to the SBS memory's cap); where the chosen
  value decides it, the row is a setting. Before, both counted as holds at the chosen cap
  (ADS: the MBS memory's) and the chosen Static size of 4.
"""

from __future__ import annotations

from collections.abc import Sequence

from edgespec.reproduce.claims import Outcome
from edgespec.reproduce.zhu.claims import z2_rows, z3_rows
from edgespec.reproduce.zhu.coverage import coverage
from edgespec.reproduce.zhu.fig6_claims import z1_rows
from edgespec.reproduce.zhu.runs import FASTEST, ONE_BATCH_TIE, SLOWEST, DrawJob, ZhuPlan
from edgespec.reproduce.zhu.setup import PAIRS, ZhuSetup

SETUP = ZhuSetup()
TIE_PLAN = ZhuPlan(1, (0.8,), (10, 100), (512,), (1792,), (25.0,), 0, 5)
ORDERING = "Fig. 7: proposed < SD w/o pipeline < FSL, No batching at every point"
TIED = "Fig. 7: proposed < SD w/o pipeline where the DP's plan is one batch"


def test_k10_ties_by_the_formula_and_is_shown_not_judged() -> None:
    """A real draw: at K = 10 the DP's plan and SD w/o pipeline's are the same single batch,
    so the latencies are equal; the point is by construction, the others are judged."""
    draw = DrawJob(SETUP, TIE_PLAN, 0)()
    assert draw["sweep/K=10/proposed"] == draw["sweep/K=10/no_pipeline"]
    assert (draw[f"sweep/K=10/{ONE_BATCH_TIE}"], draw[f"sweep/K=100/{ONE_BATCH_TIE}"]) == (1.0, 0.0)
    rows = z2_rows([draw], SETUP, "", coverage(SETUP, TIE_PLAN))[2:]
    judged, tied = rows
    assert (judged.what, judged.ours) == (ORDERING, "at the 3 points run")
    assert judged.outcome is Outcome.HOLDS
    assert "; not at K=10: by construction, the next row" in judged.tolerance
    assert (tied.what, tied.ours, tied.outcome) == (TIED, "equal at K=10", Outcome.BY_CONSTRUCTION)
    assert tied.by_construction.startswith(
        "in all 1 draw(s) the DP's plan is one batch and SD w/o pipeline plans the same batch"
    )
    assert f"(K=10: {draw['sweep/K=10/proposed']:.1f} s in both (median))" in tied.by_construction


def _fig7(proposed: float, no_pipeline: float, tie: float) -> dict[str, float]:
    point = {"proposed": proposed, "no_pipeline": no_pipeline, "fsl": 50.0, "no_batching": 60.0}
    draw = {f"sweep/K=10/{s}": v for s, v in point.items()}
    draw |= {f"sweep/K=10/{s}@o_max": v for s, v in point.items()}
    for other in ("K=100", "O_max=1792"):  # ordered, a pipeline that gains
        draw |= {
            f"sweep/{other}/{s}": v
            for s, v in (
                ("proposed", 10.0),
                ("no_pipeline", 20.0),
                ("fsl", 30.0),
                ("no_batching", 40.0),
            )
        }
        draw[f"sweep/{other}/{ONE_BATCH_TIE}"] = 0.0  # fmt: skip
    return draw | {f"sweep/K=10/{ONE_BATCH_TIE}": tie}


def test_a_point_not_tied_by_the_formula_is_still_judged() -> None:
    """Equal latencies alone (the plans differ, or batch more than once) or the pipeline
    slower: the point is judged and the ordering misses there; no by-construction row."""
    cov = coverage(SETUP, TIE_PLAN)
    for proposed, no_pipeline in ((30.0, 30.0), (31.0, 30.0)):
        rows = z2_rows([_fig7(proposed, no_pipeline, 0.0)], SETUP, "", cov)
        assert [r.what for r in rows[2:]] == [ORDERING]
        assert (rows[2].ours, rows[2].outcome) == ("not at K=10", Outcome.MISS)
    # the flag must hold in every draw: one draw whose plans differ keeps the point judged
    draws = [_fig7(30.0, 30.0, 1.0), _fig7(30.0, 30.0, 0.0)]
    assert [r.outcome for r in z2_rows(draws, SETUP, "", cov)[2:]] == [Outcome.MISS]
    # tied in every draw: shown by construction, and the ordering is judged at K=100 only
    tied = z2_rows([_fig7(30.0, 30.0, 1.0)], SETUP, "", cov)[2:]
    assert [r.outcome for r in tied] == [Outcome.HOLDS, Outcome.BY_CONSTRUCTION]


ALPHAS = (0.5, 0.9)
FIG6_PLAN = ZhuPlan(1, ALPHAS, (100,), (512,), (2048,), (25.0,), 0, 5)


def _fig6(ads: float, fastest: float, slowest: float) -> dict[str, float]:
    values = {"proposed": 100.0, "ads": ads, "ads" + FASTEST: fastest, "ads" + SLOWEST: slowest}
    return {
        f"fig6/{pair}/alpha={a}/{scheme}": value
        for pair in PAIRS
        for a in ALPHAS
        for scheme, value in values.items()
    }


def test_fig6_is_a_setting_where_adss_batch_limit_decides_it() -> None:
    cov = coverage(SETUP, FIG6_PLAN)
    # ADS at the chosen limit above the pipeline, at its fastest size below: the limit decides
    decided = z1_rows([_fig6(300.0, 90.0, 1300.0)], FIG6_PLAN, cov)[0]
    assert decided.outcome is Outcome.SETTING and decided.direction_ok is True
    assert decided.setting.startswith("ADS's batch limit, an input the paper does not give")
    assert "α = 0.5: SD 100.0 s, ADS 90.0–1300.0 s" in decided.setting
    # above the pipeline at every size: judged, and it holds
    held = z1_rows([_fig6(300.0, 120.0, 1300.0)], FIG6_PLAN, cov)[0]
    assert (held.setting, held.outcome) == ("", Outcome.HOLDS)
    # below the pipeline at every size: judged, and it misses
    missed = z1_rows([_fig6(80.0, 60.0, 95.0)], FIG6_PLAN, cov)[0]
    assert (missed.setting, missed.outcome) == ("", Outcome.MISS)
    # the pipeline against the axes: Fig. 6 prints no numbers, so its row is shown for
    # scale and not judged, inside the axes or not (it was a hold: the axes' range as a claim)
    inside = z1_rows([_fig6(300.0, 90.0, 1300.0)], FIG6_PLAN, cov)[3]
    assert inside.what == "Fig. 6: SD pipeline against the axes (every pair, every α)"
    assert (inside.direction_ok, inside.magnitude_ok, inside.outcome) == (
        None, None, Outcome.NOT_JUDGED,
    )  # fmt: skip
    assert inside.note == "for scale: inside the axes"
    slow = {
        k: 200.0 if k.endswith("/proposed") else v for k, v in _fig6(300.0, 90.0, 1300.0).items()
    }
    beyond = z1_rows([slow], FIG6_PLAN, cov)[3]  # 200 s: past the first pair's 150 s
    assert (beyond.outcome, beyond.note) == (Outcome.NOT_JUDGED, "for scale: beyond the axes")
    quick = z1_rows([_fig6(300.0, 90.0, 1300.0)], FIG6_PLAN, cov, "1 draw")[3]
    assert quick.outcome is Outcome.NOT_JUDGED


def _fig8(static: Sequence[float], ads: Sequence[float]) -> dict[str, float]:
    """Fig. 8's schemes at the Z3 rows' points, K = 100 the largest K: the others at 100 s
    at most; ``static``: chosen, fastest, slowest size; ``ads``: chosen, fastest, slowest."""
    draw: dict[str, float] = {}
    for point in ("K=90", "K=100", "I_max=1792", "O_max=1024"):  # the rows' points, alike
        draw |= {f"sweep/{point}/{s}": v for s, v in (("proposed", 80.0), ("max_batching", 100.0),
                                                      ("heuristic_batching", 90.0))}  # fmt: skip
        for scheme, values in (("static_batching", static), ("ads", ads)):
            for suffix, value in zip(("", FASTEST, SLOWEST), values, strict=True):
                draw[f"sweep/{point}/{scheme}{suffix}"] = value
    return draw


def test_static_worst_is_a_setting_where_its_size_decides_it() -> None:
    cov = coverage(SETUP, FIG6_PLAN)

    def static_row(static: Sequence[float]) -> tuple[str, Outcome]:
        rows = z3_rows([_fig8(static, (300.0, 200.0, 900.0))], SETUP, FIG6_PLAN, "", cov)
        (row,) = [r for r in rows if r.what == "Fig. 8a: Static batching worst at the largest K"]
        return row.setting, row.outcome

    setting, outcome = static_row((150.0, 95.0, 400.0))  # worst at 4, not at its fastest
    assert outcome is Outcome.SETTING
    assert setting == (
        "Static batching's size, an input the paper does not give, decides the verdict: over "
        "the sizes from 1 task a batch to the SBS memory's cap its median latency spans "
        "95.0–400.0 s, across the slowest other scheme's 100.0 s; the chosen 4 tasks a batch "
        "give 150.0 s"
    )
    assert static_row((150.0, 120.0, 400.0)) == ("", Outcome.HOLDS)  # worst at every size
    assert static_row((90.0, 60.0, 99.0)) == ("", Outcome.MISS)  # worst at none


def test_proposed_below_ads_is_judged_only_where_the_limit_does_not_decide_it() -> None:
    cov = coverage(SETUP, FIG6_PLAN)

    def ads_rows(ads: Sequence[float]) -> list[tuple[str, Outcome]]:
        rows = z3_rows([_fig8((150.0, 120.0, 400.0), ads)], SETUP, FIG6_PLAN, "", cov)
        return [(r.what, r.outcome) for r in rows if "below ADS" in r.what]

    judged = "Fig. 8: proposed below ADS at every point"
    decided = "Fig. 8: proposed below ADS, where ADS's batch limit decides it"
    assert ads_rows((300.0, 60.0, 900.0)) == [(decided, Outcome.SETTING)]
    assert ads_rows((300.0, 85.0, 900.0)) == [(judged, Outcome.HOLDS)]
    assert ads_rows((75.0, 60.0, 79.0)) == [(judged, Outcome.MISS)]
