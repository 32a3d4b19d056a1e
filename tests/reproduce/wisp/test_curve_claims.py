"""WISP claim rows W4 and W5 on hand-built results: the operating point (a setting), each
reading of Algorithm 1 against FCFS, the knees, the cause each states for its miss, and W5
shown and never judged."""

from __future__ import annotations

import dataclasses
from typing import Any

from edgespec.metrics.attribution import ViolatedRound, ViolationAttribution
from edgespec.reproduce.claims import Cause, Outcome
from edgespec.reproduce.wisp.curve_claims import knee_rows, operating_rows, w5_row
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


def test_w4_misses_state_the_throughputs_at_the_operating_point() -> None:
    fcfs = {"c2": 0.0, "c4": 0.35, "c6": 0.9, "c8": 1.0}
    worse = {"c2": 0.1, "c4": 0.9, "c6": 1.0, "c8": 1.0}
    res = results(**_at(180, 0.35, fcfs=fcfs, wisp=worse, **{"wisp-np": worse}))
    served = {"wisp": 596.2, "wisp-np": 700.0, "fcfs": 722.9}
    at = {s: dataclasses.replace(m, committed_goodput_tokens_per_s=served[s])
          for s, m in res.at_operating.items()}  # fmt: skip
    _, main, two = operating_rows(dataclasses.replace(res, at_operating=at))
    assert main.outcome is Outcome.MISS and two.outcome is Outcome.MISS
    assert main.cause is Cause.MODELLING and main.reason == two.reason
    assert main.why.endswith(
        "at N = 180 WISP commits 596 tok/s (without its predictor 700) against FCFS's 723, "
        "so where FCFS reaches Table 1's 4 tok/s rate WISP is already overloaded"
    )
    knee = knee_rows(results())[0]  # no operating point: the mechanism without numbers
    assert knee.why.endswith("WISP serves fewer tokens per second than FCFS")


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


def test_both_readings_of_algorithm_1_against_fcfs() -> None:
    fcfs = {"c2": 0.0, "c4": 0.35, "c6": 0.9, "c8": 1.0}
    printed = {"c2": 0.0, "c4": 0.9, "c6": 1.0, "c8": 1.0}
    conserving = {"c2": 0.0, "c4": 0.1, "c6": 0.5, "c8": 1.0}
    runs = _at(151, 0.35, fcfs=fcfs, wisp=printed, **{"wisp-wc": conserving})
    _, as_printed, work_conserving, _ = operating_rows(results(**runs))
    assert as_printed.what.startswith(
        "violations 8/6/4/2 tok/s at N = 151, Algorithm 1 as printed vs FCFS;"
    )
    assert work_conserving.what.startswith(
        "violations 8/6/4/2 tok/s at N = 151, Algorithm 1 work-conserving vs FCFS;"
    )
    assert (as_printed.direction_ok, work_conserving.direction_ok) == (False, True)
    assert work_conserving.ours == (
        "WISP 100.0% / 50.0% / 10.0% / 0.0% vs FCFS 100.0% / 90.0% / 35.0% / 0.0%"
    )
    assert "smaller than FCFS's" in as_printed.why  # each reading its own cause
    assert work_conserving.why == ""  # it holds; its stated cause names its reading
    assert work_conserving.reason is not None
    assert "work-conserving fills its batches past a request" in work_conserving.reason.line
    # knees: one row per reading and class
    grid = {n: metrics({"c4": r, "c6": r}) for n, r in ((60, 0.0), (120, 0.1), (180, 0.5))}
    later = {n: metrics({"c4": r, "c6": r}) for n, r in ((60, 0.0), (120, 0.0), (180, 0.1))}
    curves = {(s, n): m for s, c in (("fcfs", grid), ("wisp", grid), ("wisp-wc", later))
              for n, m in c.items()}  # fmt: skip
    knees = knee_rows(results(curves=curves))
    assert [r.what.split(": ")[1] for r in knees] == [
        "Algorithm 1 as printed vs FCFS",
        "Algorithm 1 work-conserving vs FCFS",
    ] * 2
    assert [r.direction_ok for r in knees] == [False, True, False, True]
    assert knees[1].ours == "150.0 vs 90.0"


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
