"""WISP claim rows W4 and W5 on hand-built results: the operating point (a setting), each
reading of Algorithm 1 against FCFS (the printed one judged, the work-conserving one a
sensitivity), the knees, the cause each states for its miss, and W5 shown and never
judged."""

from __future__ import annotations

import dataclasses
from typing import Any

from edgespec.metrics.attribution import ViolatedRound, ViolationAttribution
from edgespec.reproduce.claims import Cause, Outcome, headline
from edgespec.reproduce.wisp.curve_claims import (
    SMALLER_BATCHES,
    WORK_CONSERVING,
    knee_rows,
    operating_choice,
    operating_rows,
    slower_than_fcfs,
    w5_row,
)
from edgespec.reproduce.wisp.findings import findings
from edgespec.reproduce.wisp.readings import reading_line
from edgespec.reproduce.wisp.runs import Plan, WispResults
from tests.reproduce.wisp.results import at_point as _at
from tests.reproduce.wisp.results import metrics, results


def test_operating_rows_the_setting_then_wisp_against_fcfs() -> None:
    fcfs = {"c2": 0.0, "c4": 0.35, "c6": 0.9, "c8": 1.0}
    wisp = {"c2": 0.0, "c4": 0.15, "c6": 0.8, "c8": 1.0}
    setting, main, two = operating_rows(results(**_at(151, 0.35, fcfs=fcfs, wisp=wisp)))
    assert setting.outcome is Outcome.SETTING and setting.ours == "N = 151: FCFS 35.0%"
    assert setting.note == "interpolated on the device grid, then probed at N = 151"
    assert "N = 151" in main.what
    assert main.ours == "WISP 100.0% / 80.0% / 15.0% / 0.0% vs FCFS 100.0% / 90.0% / 35.0% / 0.0%"
    assert main.direction_ok is True and two.direction_ok is True and main.note == ""
    half = {**wisp, "c4": 0.2}  # 20% is more than half of 35%
    assert operating_rows(results(**_at(151, 0.35, fcfs=fcfs, wisp=half)))[1].direction_ok is False
    tie = {**wisp, "c6": 0.9}  # at 6 tok/s WISP must be below FCFS
    assert operating_rows(results(**_at(151, 0.35, fcfs=fcfs, wisp=tie)))[1].direction_ok is False
    np_ = {"c2": 0.0, "c4": 0.5, "c6": 1.0, "c8": 1.0}
    rows = operating_rows(results(**_at(151, 0.35, fcfs=fcfs, wisp=wisp, **{"wisp-np": np_})))
    assert rows[1].note == "WISP without predictor 100.0% / 100.0% / 50.0% / 0.0%"
    over = operating_rows(results(**_at(151, 0.35, fcfs={**fcfs, "c2": 0.1}, wisp=wisp)))[2]
    assert (over.ours, over.direction_ok) == ("0.0% / 10.0%", False)
    on_grid = _at(180, 0.35, fcfs=fcfs, wisp=wisp)
    on_grid["operating"] = dataclasses.replace(on_grid["operating"], probed=())
    assert operating_rows(results(**on_grid))[0].note == (
        "interpolated on the device grid; grid point 180 is within 2 points, nothing probed"
    )
    (none,) = operating_rows(results())
    assert none.outcome is Outcome.MISS and none.cause is Cause.MODELLING


def _served_at_180(plan: Plan, with_conserving: bool = False) -> WispResults:
    """WISP (and without its predictor, or ``with_conserving`` its work-conserving reading)
    missing W4 at N = 180, with its throughputs there."""
    fcfs = {"c2": 0.0, "c4": 0.35, "c6": 0.9, "c8": 1.0}
    worse = {"c2": 0.1, "c4": 0.9, "c6": 1.0, "c8": 1.0}
    res = results(plan, **_at(180, 0.35, fcfs=fcfs, wisp=worse, **{"wisp-np": worse}))
    served = {"wisp": 596.2, "wisp-np": 700.0, "fcfs": 722.9}
    if with_conserving:
        res = results(plan, **_at(180, 0.35, fcfs=fcfs, wisp=worse, **{"wisp-wc": worse}))
        served = {"wisp": 596.2, "wisp-wc": 650.0, "fcfs": 722.9}
    at = {s: dataclasses.replace(m, committed_goodput_tokens_per_s=served[s])
          for s, m in res.at_operating.items()}  # fmt: skip
    return dataclasses.replace(res, at_operating=at)


def test_w4_misses_state_the_throughputs_at_the_operating_point() -> None:
    _, main, two = operating_rows(_served_at_180(Plan.full()))
    assert main.outcome is Outcome.MISS and two.outcome is Outcome.MISS
    assert main.cause is Cause.MODELLING and main.reason == two.reason
    assert main.why.endswith(
        "at N = 180 WISP commits 596 tok/s (without its predictor 700) against FCFS's 723, "
        "so where FCFS reaches Table 1's 4 tok/s rate WISP is already overloaded"
    )
    conserving = slower_than_fcfs(_served_at_180(Plan.full(), with_conserving=True), "wisp-wc")
    assert conserving.line.endswith("at N = 180 WISP commits 650 tok/s against FCFS's 723, so "
                                    "where FCFS reaches Table 1's 4 tok/s rate WISP is already "
                                    "overloaded")  # fmt: skip
    knee = knee_rows(results())[0]  # no operating point: the mechanism without numbers
    assert knee.reason is not None and knee.outcome is Outcome.UNREACHED  # no knee on the grid
    assert knee.reason.line.endswith("WISP serves fewer tokens per second than FCFS")


def test_a_quick_run_leaves_w4_s_throughputs_to_the_full_run() -> None:
    """A quick run's numbers are not compared with the paper's: as its findings that rest on
    them, W4's cause line names its throughputs as left to the full run, the mechanism
    stated; every W4 row that misses says the same."""
    res = _served_at_180(Plan.quick())
    rows = [*operating_rows(res), *knee_rows(res)]
    misses = [r for r in rows if r.outcome is Outcome.MISS]
    assert [r.what.split(":")[0].split(",")[0] for r in misses] == [
        "violations 8/6/4/2 tok/s at N = 180", "2 tok/s class ≈ 0 for both at that N",
    ]  # fmt: skip
    # no curves: neither knee lies on the grid, not comparable (setting not reached)
    assert [r.outcome for r in rows[-2:]] == [Outcome.UNREACHED] * 2
    for row in misses:
        assert row.why == (
            f"a modelling difference — {SMALLER_BATCHES}; the committed throughputs at W4's N "
            "that show it: left to the full run (quick run)"
        )
    conserving = slower_than_fcfs(_served_at_180(Plan.quick(), with_conserving=True), "wisp-wc")
    assert conserving.line == (
        f"{WORK_CONSERVING}; the committed throughputs at W4's N that show it: left to the "
        "full run (quick run)"
    )


def test_knees_are_interpolated_on_the_grid() -> None:
    def curve(c4: tuple[float, float, float], c6: tuple[float, float, float]) -> dict[int, Any]:
        grid = zip((60, 120, 180), c4, c6, strict=True)
        return {n: metrics({"c4": a, "c6": b}) for n, a, b in grid}

    fcfs = curve((0.0, 0.1, 0.5), (0.0, 0.05, 0.9))
    wisp = curve((0.0, 0.02, 0.08), (0.0, 0.0, 0.0))
    curves = {("fcfs", n): m for n, m in fcfs.items()} | {("wisp", n): m for n, m in wisp.items()}
    knee4, knee6 = knee_rows(results(curves=curves))
    # FCFS: 60 + 0.05 / 0.1 · 60 = 90; WISP: 120 + 0.03 / 0.06 · 60 = 150
    assert (knee4.ours, knee4.direction_ok) == ("150.0 vs 90.0", True)
    assert (knee6.ours, knee6.direction_ok) == ("beyond range vs 120.0", True)
    swapped = {("fcfs", n): m for n, m in wisp.items()} | {("wisp", n): m for n, m in fcfs.items()}
    knee4, knee6 = knee_rows(results(curves=swapped))
    assert (knee4.direction_ok, knee6.direction_ok) == (False, False)
    assert knee6.ours == "120.0 vs beyond range" and knee6.cause is Cause.MODELLING


def test_the_printed_reading_is_judged_and_the_work_conserving_one_is_a_sensitivity() -> None:
    fcfs = {"c2": 0.0, "c4": 0.35, "c6": 0.9, "c8": 1.0}
    printed = {"c2": 0.0, "c4": 0.9, "c6": 1.0, "c8": 1.0}
    conserving = {"c2": 0.0, "c4": 0.1, "c6": 0.5, "c8": 1.0}
    runs = _at(151, 0.35, fcfs=fcfs, wisp=printed, **{"wisp-wc": conserving})
    res = results(**runs)
    _, as_printed, work_conserving, _ = operating_rows(res)
    assert as_printed.what.startswith(
        "violations 8/6/4/2 tok/s at N = 151, Algorithm 1 as printed vs FCFS;"
    )
    assert work_conserving.what.startswith(
        "violations 8/6/4/2 tok/s at N = 151, Algorithm 1 work-conserving vs FCFS;"
    )
    assert as_printed.outcome is Outcome.MISS and as_printed.tolerance == "direction"
    assert "smaller than FCFS's" in as_printed.why
    # the paper does not say which reading Table 1 comes from: judged once, on the printed
    # one; the other is shown with its would-be verdict, never judged
    assert work_conserving.outcome is Outcome.NOT_JUDGED
    assert (work_conserving.direction_ok, work_conserving.tolerance) == (None, "not judged")
    assert work_conserving.ours == (
        "WISP 100.0% / 50.0% / 10.0% / 0.0% vs FCFS 100.0% / 90.0% / 35.0% / 0.0%"
    )
    assert work_conserving.note == (
        "a sensitivity, not judged: the paper does not say which reading of Algorithm 1 "
        "Table 1 comes from, and W4 is judged once, on the printed one (WISP): WISP ≤ ½ FCFS "
        "at 4 tok/s and below FCFS at 6 ✓"
    )
    # where the printed reading misses and the other would hold: the full run's finding
    # says so; a quick run states none from its verdicts
    (sled, w4) = findings(dataclasses.replace(res, plan=Plan.full()))
    assert w4.claims == "W4 (Table 1)" and w4.cause is Cause.INCONSISTENT
    printed_only = results(plan=Plan.full(), **_at(151, 0.35, fcfs=fcfs, wisp=printed))
    assert findings(printed_only) == (sled,)
    assert [f.claims for f in findings(res)] == ["W1/W3 (Tables 2–3, WISP/SLED)"]
    # knees: one row per reading and class, the work-conserving ones not judged
    grid = {n: metrics({"c4": r, "c6": r}) for n, r in ((60, 0.0), (120, 0.1), (180, 0.5))}
    later = {n: metrics({"c4": r, "c6": r}) for n, r in ((60, 0.0), (120, 0.0), (180, 0.1))}
    curves = {(s, n): m for s, c in (("fcfs", grid), ("wisp", grid), ("wisp-wc", later))
              for n, m in c.items()}  # fmt: skip
    knees = knee_rows(results(curves=curves))
    assert [r.what.split(": ")[1] for r in knees] == [
        "Algorithm 1 as printed vs FCFS",
        "Algorithm 1 work-conserving vs FCFS",
    ] * 2
    # WISP's curve is FCFS's: both knees at 90, within one grid step, not comparable; the
    # work-conserving reading is not judged
    within, unjudged = Outcome.WITHIN_RESOLUTION, Outcome.NOT_JUDGED
    assert [r.outcome for r in knees] == [within, unjudged] * 2
    assert knees[0].ours == "90.0 vs 90.0 (not comparable (within resolution))"
    assert knees[1].ours == "150.0 vs 90.0"
    assert knees[1].note.endswith("on the printed one (WISP): shifts right ✓")


def test_the_work_conserving_reading_is_listed_among_the_sensitivities() -> None:
    fcfs = {"c2": 0.0, "c4": 0.35, "c6": 0.9, "c8": 1.0}
    worse = {"c2": 0.0, "c4": 0.9, "c6": 1.0, "c8": 1.0}
    grid = {n: metrics({"c4": r, "c6": r}) for n, r in ((60, 0.0), (120, 0.1), (180, 0.5))}
    later = {n: metrics({"c4": r, "c6": r}) for n, r in ((60, 0.0), (120, 0.0), (180, 0.1))}
    curves = {(s, n): m for s, c in (("fcfs", grid), ("wisp", grid), ("wisp-wc", later))
              for n, m in c.items()}  # fmt: skip
    res = results(curves=curves, **_at(180, 0.35, fcfs=fcfs, wisp=worse, **{"wisp-wc": worse}))
    assert reading_line(res) == (
        "**Algorithm 1's stop** (chosen: as printed, WISP stops a batch at the first request "
        "that does not fit; the paper does not say which reading Table 1 comes from): read as "
        "work-conserving (`wisp-wc`: it skips that request and tries the next), W4's "
        "comparison with FCFS (WISP ≤ ½ FCFS at 4 tok/s, below it at 6) at N = 180 would be "
        "✗, its knees' shift right at 4 / 6 tok/s ✓ / ✓; the W4 rows of the work-conserving "
        "reading show its numbers."
    )
    assert "would be –, its knees' shift right at 4 / 6 tok/s – / –;" in reading_line(results())


def test_w5_is_shown_and_never_judged() -> None:
    fcfs = {"c2": 0.0, "c4": 0.35, "c6": 0.9, "c8": 1.0}
    violated = tuple(ViolatedRound(f"r{i}", i, 0, 0.1, 0.1, 2.0 if i < 3 else 1.0, i < 3)
                     for i in range(4))  # fmt: skip
    attribution = ViolationAttribution(20, 1.5, 100, violated)
    row = w5_row(results(**_at(151, 0.35, fcfs=fcfs, wisp=fcfs), attribution=attribution))
    assert row.ours == "75.0% (3 of 4 violated rounds), WISP at N = 151, simulated"
    assert (row.direction_ok, row.magnitude_ok, row.outcome) == (None, None, Outcome.NOT_JUDGED)
    assert row.note.startswith("not judged: the simulated verifier is Eq. 19 itself")
    assert w5_row(results()).ours == "no operating point: not run"


def test_an_operating_point_not_reached_makes_the_rows_judged_there_not_comparable() -> None:
    """The probes ran out 11.4 points from Table 1's 36.45%: the setting says so, and the
    rows judged at that N are not comparable (their numbers still shown)."""
    fcfs = {"c2": 0.0, "c4": 0.25, "c6": 0.9, "c8": 1.0}
    wisp = {"c2": 0.0, "c4": 0.9, "c6": 1.0, "c8": 1.0}
    res = results(**_at(147, 0.25, fcfs=fcfs, wisp=wisp, **{"wisp-wc": wisp}))
    setting, main, conserving, two = operating_rows(res)
    assert setting.outcome is Outcome.SETTING and setting.ours == "N = 147: FCFS 25.0%"
    assert setting.verdict == (
        "setting: N is chosen so that FCFS's 4 tok/s violation rate is Table 1's 36.45%; not "
        "reached (11.4 points off, tolerance 2): the rows judged at this N are not comparable"
    )
    unreached = (
        "Table 1's operating point not reached: FCFS 25.0% at N = 147, 11.4 points from "
        "36.45% (tolerance 2)"
    )
    for row in (main, two):
        assert row.outcome is Outcome.UNREACHED and row.verdict == f"not comparable: {unreached}"
        assert row.why == "" and row.cause is None
    assert main.ours.endswith("vs FCFS 100.0% / 90.0% / 25.0% / 0.0%")
    assert conserving.outcome is Outcome.NOT_JUDGED  # a sensitivity stays one
    assert headline([setting, main, conserving, two]) == (
        "4 rows: 0 hold, 0 hold in direction only, 0 miss, 1 not judged, 1 setting, not a "
        "claim, 2 not comparable (setting not reached)"
    )
    (chosen,) = operating_choice(res)
    assert chosen[1].endswith(
        "the N nearest the level wins: N = 147, FCFS 25.0% (probed at 147), not reached: "
        "11.4 points off. WISP's knees are interpolated on the same grid."
    )
    # no W4 finding rests on verdicts off the level, even where the readings part ways
    parted = {**wisp, "c4": 0.1, "c6": 0.5}
    full = results(Plan.full(), **_at(147, 0.25, fcfs=fcfs, wisp=wisp, **{"wisp-wc": parted}))
    assert [f.claims for f in findings(full)] == ["W1/W3 (Tables 2–3, WISP/SLED)"]
    # within the tolerance: reached, and the rows are judged there
    near = results(**_at(147, 0.35, fcfs={**fcfs, "c4": 0.35}, wisp=wisp))
    setting, main, two = operating_rows(near)
    assert setting.verdict.endswith("36.45%; reached (1.5 points off, tolerance 2)")
    assert (main.outcome, two.outcome) == (Outcome.MISS, Outcome.HOLDS)
