"""DSD's claim rows from hand-built run summaries, in both cost modes: each verdict flips
when the numbers do; each miss carries the cause its claim states in its mode, and a quick
run's magnitudes are marked. Also the run summaries (DSD-Sim's TPOT from round records,
:func:`summarise`) and the scenario dicts every claim runs."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from edgespec.core.types import RequestRecord, RoundRecord
from edgespec.metrics import summarize
from edgespec.reproduce.claims import Cause, ClaimRow, Outcome
from edgespec.reproduce.dsd.causes import (
    CAUSES,
    MODE_TAGS,
    UNSATURATED,
    catch_up_reason,
    policies_reason,
    table_throughput_reason,
    tagged,
)
from edgespec.reproduce.dsd.claims import all_rows, table_rows
from edgespec.reproduce.dsd.crossover_claims import crossover_rows, crossover_rtt_ms
from edgespec.reproduce.dsd.paper import PAPER_TABLE2
from edgespec.reproduce.dsd.runs import (
    CROSSOVER_MODES,
    LAB_BOUNDS,
    VARIANT_MODES,
    DsdPlan,
    DsdResults,
    batching_name,
    crossover_name,
    lab_bound_name,
    plan_scenarios,
    routing_name,
    stack_name,
    table_name,
)
from edgespec.reproduce.dsd.setup import (
    COST_MODES,
    STACKS,
    CostMode,
    DsdSetup,
    RoundMode,
    device_pools,
    scenario,
    target_counts,
)
from edgespec.reproduce.dsd.stack_claims import stack_rows
from edgespec.reproduce.dsd.summary import DsdRunSummary, DsdSimTpot, summarise
from edgespec.reproduce.dsd.sweep_claims import batching_rows, quick_run, routing_rows

PLAN = DsdPlan(DsdSetup(), ("gsm8k",), ("C1", "C2"), (10.0, 40.0, 60.0, 90.0), (400, 1000, 1400))
SUMMED = replace(PLAN, setup=replace(PLAN.setup, batch_pricing="summed"))
"""The plan with D2's stacks and D7's runs priced summed: LAB has no padding to save."""
MODES = pytest.mark.parametrize("mode", COST_MODES)


def run(thr: float, ttft: float, tpot: float) -> DsdRunSummary:
    return DsdRunSummary(thr, ttft, tpot, 100)


def by_what(rows: list[ClaimRow], mode: CostMode = "physical") -> dict[str, ClaimRow]:
    """``rows`` by their ``what`` without the mode tag (every row must carry ``mode``'s)."""
    prefix = f"[{MODE_TAGS[mode]}] "
    assert all(r.what.startswith(prefix) for r in rows)
    return {r.what.removeprefix(prefix): r for r in rows}


@MODES
def test_stack_gain_and_tpot_cut_within_tolerance(mode: CostMode) -> None:
    thr = {"default": 25.0, "s1": 25.5, "s2": 26.0, "s3": 27.0, "s4": 28.0}  # +12.0%
    tpot = {"default": 45.0, "s1": 44.0, "s2": 43.0, "s3": 40.0, "s4": 37.0}
    runs = {stack_name(s): run(thr[s], 350.0 - i, tpot[s]) for i, s in enumerate(STACKS)}
    rows = stack_rows(DsdResults(PLAN.in_mode(mode), runs))
    gain, cut, ttft = rows[0], rows[1], rows[2]
    assert gain.what == tagged(mode, "throughput gain Default → S4 (GSM8K, 600 drafts, 10 ms)")
    assert (gain.direction_ok, gain.magnitude_ok) == (True, None)  # the size: shown
    assert gain.ours == "25.00 → 25.50 → 26.00 → 27.00 → 28.00 (+12.0%)"
    assert gain.tolerance == (
        "gain > 0 and the chain rises at every link; the gain's size shown, not judged (note)"
    )
    assert (cut.direction_ok, cut.magnitude_ok) == (True, True)
    assert cut.what == tagged(mode, "TPOT change Default → S4")
    assert cut.ours == "45.0 → 44.0 → 43.0 → 40.0 → 37.0 ms (−17.8%)".replace("−", "-")
    assert ttft.direction_ok is True
    # padded batches: LAB's link is judged like the others; a drop there breaks both chains
    lab = dict(runs) | {stack_name("s2"): run(24.0, 340.0, 46.0)}
    rows = stack_rows(DsdResults(PLAN.in_mode(mode), lab))
    assert (rows[0].direction_ok, rows[1].direction_ok) == (False, False)
    # summed pricing: LAB's link (⇢) is not judged: the same drop leaves both chains holding
    rows = stack_rows(DsdResults(SUMMED.in_mode(mode), runs))
    assert rows[0].what == tagged(mode, "throughput gain Default → S4 (GSM8K, 600 drafts, 10 ms)")
    assert rows[0].ours == "25.00 → 25.50 ⇢ 26.00 → 27.00 → 28.00 (+12.0%)"  # ⇢: LAB's link
    assert rows[1].ours == "45.0 → 44.0 ⇢ 43.0 → 40.0 → 37.0 ms (−17.8%)".replace("−", "-")
    rows = stack_rows(DsdResults(SUMMED.in_mode(mode), lab))
    assert (rows[0].direction_ok, rows[1].direction_ok) == (True, True)
    assert rows[1].tolerance == (
        "TPOT falls and the chain falls at every link but LAB's (⇢); ±25% of −17.8%"
    )
    s3 = dict(runs) | {stack_name("s3"): run(29.0, 340.0, 36.0)}  # S3 → S4 reverses
    rows = stack_rows(DsdResults(PLAN.in_mode(mode), s3))
    assert (rows[0].direction_ok, rows[1].direction_ok) == (False, False)
    flat = dict(runs) | {stack_name("s4"): run(26.8, 340.0, 40.3)}  # within 1% of S3
    rows = stack_rows(DsdResults(PLAN.in_mode(mode), flat))
    assert (rows[0].direction_ok, rows[1].direction_ok) == (True, True)
    # a dip along the chain breaks the monotone direction; a tiny gain misses the magnitude
    runs[stack_name("s2")] = run(24.0, 340.0, 43.0)
    runs[stack_name("s4")] = run(25.2, 340.0, 44.0)
    rows = stack_rows(DsdResults(PLAN.in_mode(mode), runs))
    assert rows[0].direction_ok is False and rows[0].magnitude_ok is None
    # the cause names the steps that lower throughput (LAB's, AWC's), not a family's
    assert rows[0].outcome is Outcome.MISS and rows[0].reason == policies_reason(
        [("S1 → S2 (adds LAB)", "s2"), ("S3 → S4 (adds AWC)", "s4")], "lowers throughput"
    )
    assert rows[1].magnitude_ok is False  # −2.2% TPOT is far from −17.8%
    assert rows[1].direction_ok is False  # the endpoints fall, but S3 → S4 rises 40 → 44 ms
    assert rows[1].outcome is Outcome.MISS
    assert rows[1].reason == policies_reason([("S3 → S4 (adds AWC)", "s4")], "raises TPOT")
    assert rows[1].why.startswith(
        "an input the paper does not give — S3 → S4 (adds AWC) raises TPOT: the paper's WC-DNN"
    )


def crossover(
    dist: list[float],
    cloud: list[float],
    colocated: list[float] | None = None,
    plan: DsdPlan = PLAN,
) -> DsdResults:
    """Crossover runs of ``plan``'s RTTs: TPOT per round mode (colocated: 99 ms, losing,
    unless given)."""
    colocated = colocated or [99.0] * len(dist)
    runs = {}
    for i, rtt in enumerate(plan.crossover_rtts_ms):
        for mode, tpot in zip(CROSSOVER_MODES, (dist, cloud, colocated), strict=True):
            runs[crossover_name(mode, rtt)] = run(20.0, 300.0, tpot[i])
    return DsdResults(plan, runs)


def test_crossover_is_the_first_rtt_from_which_cloud_only_stays_ahead() -> None:
    res = crossover([30.0, 40.0, 52.0, 70.0], [50.0, 50.0, 50.0, 50.0])
    assert crossover_rtt_ms(res) == crossover_rtt_ms(res, "cloud_only") == 60.0
    row = crossover_rows(res)[0]
    assert (row.direction_ok, row.magnitude_ok, row.ours) == (True, True, "60 ms")
    # cloud-only ahead at 40 ms, behind again at 60: only from 90 on does it stay ahead
    res = crossover([30.0, 55.0, 45.0, 70.0], [50.0, 50.0, 50.0, 50.0])
    assert crossover_rtt_ms(res) == 90.0
    assert crossover_rows(res)[0].magnitude_ok is False
    never = crossover([30.0, 31.0, 32.0, 33.0], [50.0, 50.0, 50.0, 50.0])
    assert crossover_rtt_ms(never) is None
    row = crossover_rows(never)[0]
    assert (row.ours, row.direction_ok) == ("none in the sweep", False)


def test_crossover_row_reads_cloud_only_and_notes_the_colocated_crossover() -> None:
    """D3 judges DSD's fused mode (cloud-only); the colocated extension's TPOTs and its own
    crossover only go in the note, whichever way they fall."""
    dist, cloud = [30.0, 40.0, 52.0, 70.0], [50.0, 50.0, 50.0, 50.0]
    res = crossover(dist, cloud, [25.0, 35.0, 50.0, 80.0])  # ahead up to 60 ms, then not
    assert crossover_rtt_ms(res, "colocated") is None
    (row,) = crossover_rows(res)
    assert row.what == tagged(
        "physical",
        "crossover RTT where fused (cloud-only) TPOT ≤ distributed (GSM8K, 600 drafts, "
        "4-GPU servers)",
    )
    assert (row.ours, row.direction_ok, row.magnitude_ok) == ("60 ms", True, True)
    assert row.note == (
        "TPOT ms, distributed / cloud-only / colocated: 10 ms: 30.0 / 50.0 / 25.0; "
        "40 ms: 40.0 / 50.0 / 35.0; 60 ms: 52.0 / 50.0 / 50.0; 90 ms: 70.0 / 50.0 / 80.0; "
        "colocated (edgespec's extension) crosses at none"
    )
    res = crossover(dist, cloud, [45.0, 39.0, 40.0, 45.0])  # from 40 ms on
    assert crossover_rtt_ms(res, "colocated") == 40.0
    (row,) = crossover_rows(res)
    assert row.ours == "60 ms" and row.note.endswith("(edgespec's extension) crosses at 40 ms")
    # colocated ahead throughout: the note's crossover is the first RTT; the verdict unchanged
    res = crossover(dist, cloud, [20.0, 20.0, 20.0, 20.0])
    (row,) = crossover_rows(res)
    assert row.note.endswith("crosses at 10 ms")
    assert (row.ours, row.direction_ok, row.magnitude_ok) == ("60 ms", True, True)
    # a missing colocated run: n/a in the note, no crossover
    runs = dict(res.runs)
    del runs[crossover_name("colocated", 90.0)]
    (row,) = crossover_rows(DsdResults(PLAN, runs))
    assert "90 ms: 70.0 / 50.0 / n/a" in row.note and row.note.endswith("crosses at none")


@MODES
def test_crossover_misses_carry_their_modes_cause(mode: CostMode) -> None:
    plan = PLAN.in_mode(mode)
    # cloud-only slower at every RTT (a queued, batched cloud-only round)
    slower = crossover([30.0, 31.0, 32.0, 33.0], [50.0] * 4, plan=plan)
    # cloud-only ahead at every RTT (no distributed win at low RTT)
    faster = crossover([53.5, 60.0, 70.0, 93.4], [35.0] * 4, plan=plan)
    # crossing late, beyond 80 ms: direction right, magnitude not
    late = crossover([30.0, 40.0, 45.0, 60.0], [50.0] * 4, plan=plan)
    for res, outcome in (
        (slower, Outcome.MISS),
        (faster, Outcome.MISS),
        (late, Outcome.DIRECTION_ONLY),
    ):
        (row,) = crossover_rows(res)
        assert row.what.startswith(f"[{MODE_TAGS[mode]}] crossover RTT")
        assert row.outcome is outcome
        assert row.reason == CAUSES[mode].crossover
        assert row.cause is CAUSES[mode].crossover.cause
        assert row.why == str(CAUSES[mode].crossover)
    expected = {"physical": Cause.SIMPLIFICATION, "dsdsim_compat": Cause.MISSING_INPUT}[mode]
    assert crossover_rows(slower)[0].cause is expected


def _table(awc_thr_gain: float, awc_tpot: float, mode: CostMode = "physical") -> DsdResults:
    runs = {}
    for config in PLAN.table_configs:
        for window, thr in (("static", 20.0), ("dynamic", 20.5), ("awc", 20.0 * awc_thr_gain)):
            tpot = awc_tpot if window == "awc" else 40.0
            runs[table_name("gsm8k", config, window)] = run(thr, 350.0, tpot)
    return DsdResults(PLAN.in_mode(mode), runs)


@MODES
def test_table_counts_and_mean_gain(mode: CostMode) -> None:
    rows = table_rows(_table(1.06, 37.0, mode))
    got = by_what(rows[:4], mode)
    assert got["AWC throughput ≥ Static"].ours == "2 of 2"
    assert got["AWC throughput ≥ Static"].direction_ok is True
    paper_c1 = PAPER_TABLE2[("gsm8k", "C1")]["thr"]
    paper_c2 = PAPER_TABLE2[("gsm8k", "C2")]["thr"]
    paper_mean = (paper_c1[2] / paper_c1[0] + paper_c2[2] / paper_c2[0]) / 2 - 1
    gain = got["mean AWC throughput gain over Static"]
    assert gain.paper == f"{paper_mean * 100:+.1f}%" and gain.ours == "+6.0%"
    assert gain.magnitude_ok is True  # 6.0% vs 6.3%
    assert got["AWC TPOT below Static"].direction_ok is True
    assert got["AWC throughput ≥ Dynamic"].ours == "2 of 2"
    worse = by_what(table_rows(_table(0.99, 41.0, mode))[:4], mode)
    assert worse["AWC throughput ≥ Static"].direction_ok is False
    assert worse["AWC TPOT below Static"].direction_ok is False
    assert worse["AWC throughput ≥ Dynamic"].ours == "0 of 2"
    for row in worse.values():
        assert row.outcome is Outcome.MISS and row.reason == CAUSES[mode].awc
    cells = [r for r in rows if "Table 2" in r.what]
    assert len(cells) == 2 * 3  # two configurations × throughput, TTFT, TPOT
    assert cells[0].what == tagged(mode, "Table 2 C1 gsm8k thr (Static / Dynamic / AWC)")
    assert cells[0].paper == "25.8 / 26.1 / 28.3 req/s"


def test_routing_and_batching_sweeps() -> None:
    runs = {}
    for n, jsq, rr in ((400, 40.0, 50.0), (1000, 60.0, 59.0), (1400, 80.0, 78.0)):
        runs[routing_name("jsq", n)] = run(20.0, 300.0, jsq)
        runs[routing_name("round_robin", n)] = run(20.0, 300.0, rr)
    for n, fifo, lab in ((400, 40.0, 38.5), (1000, 60.0, 58.8), (1400, 80.0, 78.0)):
        runs[batching_name("fcfs", n)] = run(30.0, 300.0, fifo)
        runs[batching_name("lab", n)] = run(30.3, 300.0, lab)
    res = DsdResults(PLAN, runs)
    gap, catch_up = routing_rows(res)
    assert (gap.direction_ok, gap.magnitude_ok, gap.ours) == (True, True, "+10.0")
    assert (catch_up.ours, catch_up.magnitude_ok) == ("1000", True)
    lab_row, thr_row = batching_rows(res)
    # padded batches (the setting): LAB's TPOT cut is judged, the bound sweep beside it
    assert (lab_row.direction_ok, lab_row.magnitude_ok) == (True, True)
    assert lab_row.ours == "-1.50, -1.20, -2.00"
    assert lab_row.note == (
        "by drafts: 400: -1.50 ms; 1000: -1.20 ms; 1400: -2.00 ms; LAB's length bound swept "
        "(LAB − FIFO TPOT, ms, by drafts): 1.25×: n/a, n/a, n/a; 1.5× (the setting): -1.50, "
        "-1.20, -2.00; 2×: n/a, n/a, n/a; 3×: n/a, n/a, n/a; none: n/a, n/a, n/a"
    )
    # the bound sweep's runs, each against FIFO's TPOT at its draft count (40, 60, 80 ms)
    for n, bound, tpot in ((400, 1.25, 40.5), (1000, 3.0, 59.75), (1400, None, 81.0)):
        runs[lab_bound_name(bound, n)] = run(30.0, 300.0, tpot)
    note = batching_rows(DsdResults(PLAN, runs))[0].note
    assert note.endswith(
        "1.25×: +0.50, n/a, n/a; 1.5× (the setting): -1.50, -1.20, -2.00; 2×: n/a, n/a, n/a; "
        "3×: n/a, -0.25, n/a; none: n/a, n/a, +1.00"
    )
    assert thr_row.what == tagged("physical", "LAB vs FIFO throughput at 1400 drafts (saturated)")
    assert (thr_row.ours, thr_row.direction_ok, thr_row.magnitude_ok) == ("+1.0%", True, True)
    # summed pricing: LAB's TPOT cut is unreachable by construction: not judged, whichever
    # way the runs fall; the note says which
    lab_row = batching_rows(DsdResults(SUMMED, runs))[0]
    assert (lab_row.direction_ok, lab_row.magnitude_ok, lab_row.outcome) == (
        None, None, Outcome.NOT_JUDGED,
    )  # fmt: skip
    assert lab_row.note.startswith("not judged: unreachable by construction")
    assert "(LAB lower at every count: yes)" in lab_row.note
    runs[batching_name("lab", 1000)] = run(30.0, 300.0, 60.5)  # LAB worse at one point
    lab_row = batching_rows(DsdResults(SUMMED, runs))[0]
    assert lab_row.direction_ok is None and "(LAB lower at every count: no)" in lab_row.note
    assert batching_rows(DsdResults(PLAN, runs))[0].direction_ok is False


def _batching(fifo: tuple[float, ...], lab: tuple[float, ...], mode: CostMode) -> DsdResults:
    runs = {}
    for n, f, lab_thr in zip(PLAN.sweep_drafts, fifo, lab, strict=True):
        runs[batching_name("fcfs", n)] = run(f, 300.0, 40.0)
        runs[batching_name("lab", n)] = run(lab_thr, 300.0, 39.0)
    return DsdResults(PLAN.in_mode(mode), runs)


@MODES
def test_d7_throughput_row_needs_saturated_targets(mode: CostMode) -> None:
    """D7's equal throughput holds only where the targets are saturated: FIFO throughput
    grows at most 10% between the two largest draft counts."""
    _, row = batching_rows(_batching((20.0, 30.0, 32.0), (20.0, 30.0, 32.5), mode))  # +6.7%
    assert (row.direction_ok, row.magnitude_ok, row.ours) == (True, True, "+1.6%")
    assert row.tolerance == (
        "targets saturated (FIFO throughput grows ≤ 10% from 1000 to 1400 drafts); within ±5%"
    )
    assert row.note == "FIFO throughput by drafts: 400: 20.00, 1000: 30.00, 1400: 32.00"
    _, row = batching_rows(_batching((20.0, 30.0, 27.0), (20.0, 30.0, 27.0), mode))  # falls
    assert row.direction_ok is True
    # still growing 20%: LAB's equal throughput says nothing about a saturated fleet
    _, row = batching_rows(_batching((20.0, 30.0, 36.0), (20.0, 30.0, 36.0), mode))
    assert (row.ours, row.direction_ok, row.magnitude_ok) == ("+0.0%", False, True)
    assert row.outcome is Outcome.MISS and row.reason == UNSATURATED  # the load's, not LAB's
    assert row.cause is UNSATURATED.cause
    # a missing FIFO run at the largest count: not shown saturated
    runs = dict(_batching((20.0, 30.0, 30.0), (20.0, 30.0, 30.0), mode).runs)
    del runs[batching_name("fcfs", 1400)]
    _, row = batching_rows(DsdResults(PLAN.in_mode(mode), runs))
    assert (row.direction_ok, row.magnitude_ok) == (False, False)
    # one draft count: nothing to judge saturation by
    one = DsdPlan(DsdSetup(), ("gsm8k",), ("C1",), (10.0,), (400,))
    res = DsdResults(one, {batching_name(b, 400): run(20.0, 300.0, 40.0) for b in ("fcfs", "lab")})
    _, row = batching_rows(res)
    assert row.direction_ok is False and "from - to 400 drafts" in row.tolerance
    # a quick run's sweep that stops short of saturation says so, not LAB's cause
    quick = DsdResults(replace(PLAN, setup=DsdPlan.quick().setup).in_mode(mode),
                       _batching((20.0, 30.0, 36.0), (20.0, 30.0, 36.0), mode).runs)  # fmt: skip
    _, row = batching_rows(quick)
    assert row.outcome is Outcome.MISS and row.reason == UNSATURATED
    assert row.cause is UNSATURATED.cause


@MODES
def test_missing_runs_give_misses_not_errors(mode: CostMode) -> None:
    rows = all_rows(DsdResults(PLAN.in_mode(mode), {}))
    assert rows and all(r.magnitude_ok is not True for r in rows)
    assert all(r.outcome is not Outcome.HOLDS for r in rows)


def _family(row: ClaimRow) -> str:
    """The :class:`~edgespec.reproduce.dsd.causes.DsdCauses` field ``row``'s claim states."""
    what = row.what.split("] ", 1)[1]
    if row.claim_id == "D6":
        return "routing"
    if row.claim_id == "D7":
        return "batching"
    if row.claim_id == "D3":
        return "crossover"
    if what.startswith("Table 2"):
        return {"thr": "absolute", "ttft": "table_ttft", "tpot": "table_tpot"}[what.split()[4]]
    if "AWC" in what:
        return "awc"
    if what.startswith("throughput gain"):
        return "stack_gain"
    if what.startswith("TPOT change"):
        return "stack_tpot"
    if what.startswith("TTFT"):
        return "stack_ttft"
    assert "(absolute)" in what, what
    return "absolute"


@MODES
def test_every_row_carries_its_modes_tag_and_cause(mode: CostMode) -> None:
    """Every row (all of Table 2's cells) names its cost mode and states the cause its
    claim family gives in that mode; a miss shows it."""
    plan = DsdPlan(DsdSetup(), ("gsm8k", "humaneval", "cnndm"), ("C1", "C3"), (10.0, 60.0),
                   (400, 1200)).in_mode(mode)  # fmt: skip
    rows = all_rows(DsdResults(plan, {}))
    assert {r.claim_id for r in rows} == {"D2", "D3", "D4", "D5", "D6", "D7"}
    assert len(rows) == 5 + 1 + 4 + 3 * 2 * 3 + 2 + 2
    families = set()
    for row in rows:
        assert row.what.startswith(f"[{MODE_TAGS[mode]}] ")
        family = _family(row)
        families.add(family)
        reason = getattr(CAUSES[mode], family)
        what = row.what.split("] ", 1)[1].split()
        if what[:2] == ["Table", "2"] and what[4] == "thr":  # a cause per cell (Little's law)
            reason = table_throughput_reason(what[3], what[2])
        if row.claim_id == "D7" and "saturated" in row.what:  # no run saturates: the load's
            reason = UNSATURATED
        if row.claim_id == "D6" and "catches up" in row.what:  # from the run's gaps: none
            reason = catch_up_reason([], None)
        assert row.reason == reason, row.what
        if row.outcome is Outcome.NOT_JUDGED:  # D7's TPOT: unreachable by construction
            assert row.claim_id == "D7" and row.why == "" and row.cause is None
            continue
        if row.outcome is Outcome.SETTING:  # the think time's fit: no cause shown
            assert what[2:5] == ["C1", "gsm8k", "thr"] and row.cause is None
            continue
        assert row.outcome is not Outcome.HOLDS and row.cause is reason.cause
        assert row.why.startswith(str(reason))
    assert families == {f.name for f in fields(CAUSES[mode])}  # every family is used


def test_plan_scenarios_cover_every_claim() -> None:
    quick = DsdPlan.quick()
    names = set(plan_scenarios(quick))
    assert {stack_name(s) for s in STACKS} <= names
    assert {crossover_name(m, r) for m in CROSSOVER_MODES for r in (10.0, 60.0, 120.0)} <= names
    variant = {crossover_name(m, r, variant=True) for m in VARIANT_MODES for r in (10.0, 120.0)}
    assert variant <= names
    assert routing_name("round_robin", 1200) in names and batching_name("lab", 400) in names
    assert {lab_bound_name(b, n) for b in LAB_BOUNDS for n in (400, 1200)} <= names
    assert len(names) == 5 + 3 * 3 + 2 * 2 + 3 + 2 * 4 + 2 * 4  # D7: FIFO, LAB, 4 bounds
    assert len(plan_scenarios(DsdPlan.full())) == 5 + 11 * 3 + 8 * 2 + 3 * 4 * 3 + 7 * 8
    # one batch pricing, chosen once: every run prices padded batches
    for name, data in plan_scenarios(quick).items():
        assert {s["batch_pricing"] for s in data["auto_topology"]["servers"]} == {"padded"}, name
    bounded = plan_scenarios(quick)
    assert bounded["batching-lab-bound2-400"]["policies"]["batching"] == {
        "name": "lab", "params": {"max_length_ratio": 2.0},
    }  # fmt: skip
    assert bounded["batching-lab-boundnone-1200"]["policies"]["batching"] == {
        "name": "lab", "params": {"max_length_ratio": None},
    }  # fmt: skip
    assert bounded["batching-lab-400"]["policies"]["batching"]["params"] == {
        "max_length_ratio": 1.5
    }
    # each cost mode runs the same scenarios under the same names
    for mode in COST_MODES:
        planned = plan_scenarios(quick.in_mode(mode))
        assert set(planned) == names
        assert all(data["name"] == name for name, data in planned.items())
    assert quick.in_mode("dsdsim_compat").setup == replace(quick.setup, cost_mode="dsdsim_compat")
    assert quick.in_mode("dsdsim_compat").in_mode("physical") == quick


def test_fleet_is_the_papers_4_gpu_servers_tp1_the_variant_scaled_by_the_share() -> None:
    assert target_counts(1.0) == [7, 7, 6]
    assert target_counts(0.25) == [2, 2, 1]
    assert target_counts(0.01) == [1, 1, 1]  # at least one of each
    pools = device_pools(601)
    assert sum(p["count"] for p in pools) == 601 and len(pools) == 6
    assert [p["count"] for p in pools] == [101, 100, 100, 100, 100, 100]
    data = scenario(DsdSetup(), name="x", dataset="gsm8k", num_drafts=600, rtt_ms=10.0)
    assert data["auto_topology"]["servers"] == [
        {"name": f"{m}-{hw}", "count": n, "target_model": m, "hardware": hw, "max_batch_size": 12,
         "batch_pricing": "padded"}
        for m, hw, n in (("llama2-70b", "4xa100", 7), ("qwen-72b", "4xh100", 7),
                         ("llama3-70b", "4xa6000", 6))
    ]  # fmt: skip
    tp1 = scenario(replace(DsdSetup(), fleet="dsdsim_tp1"), name="x", dataset="gsm8k",
                   num_drafts=600, rtt_ms=10.0)  # fmt: skip
    assert [s["hardware"] for s in tp1["auto_topology"]["servers"]] == ["a100", "h100", "a6000"]
    variant = plan_scenarios(DsdPlan.quick())["crossover-tp1-cloud_only-rtt120"]
    assert [s["hardware"] for s in variant["auto_topology"]["servers"]] == [
        "a100", "h100", "a6000",
    ]  # fmt: skip
    assert variant["mode"] == "fused" and variant["links"]["default"]["rtt_ms"] == 120.0
    assert sum(p["count"] for p in data["auto_topology"]["devices"]) == 600
    assert {p["hardware"] for p in data["auto_topology"]["devices"]} == {"a40", "v100"}
    quarter = replace(DsdSetup(), fleet_share=0.25)
    for drafts, scaled in ((600, 150), (1000, 250), (1200, 300), (2, 1)):
        data = scenario(quarter, name="x", dataset="gsm8k", num_drafts=drafts, rtt_ms=10.0)
        assert sum(p["count"] for p in data["auto_topology"]["devices"]) == scaled
        assert [s["count"] for s in data["auto_topology"]["servers"]] == [2, 2, 1]
    quick = plan_scenarios(DsdPlan.quick())["routing-jsq-1200"]["auto_topology"]
    assert sum(p["count"] for p in quick["devices"]) == 300
    assert sum(s["count"] for s in quick["servers"]) == 5


def test_workload_is_closed_loop_with_lognormal_think_time() -> None:
    setup = replace(DsdSetup(), jitter_share=0.2)
    data = scenario(setup, name="x", dataset="cnndm", num_drafts=600, rtt_ms=30.0)
    assert data["links"]["default"] == {
        "rtt_ms": 30.0, "jitter_ms": pytest.approx(6.0), "bandwidth_mbps": 100.0
    }  # fmt: skip
    assert data["workload"] == {
        "kind": "closed_loop",
        "dataset": "sharegpt",  # no CNN/DailyMail length table
        "think_time_s": pytest.approx(17.42013895, abs=1e-8),  # Little's law over C1 GSM8K
        "think_distribution": "lognormal",
        "think_cv": 0.6,
        "think_min_s": 0.22,
        "ramp_s": pytest.approx(17.42013895, abs=1e-8),
    }
    assert data["acceptance"] == {"kind": "trace", "traces": ["cnndm"]}
    assert data["duration_s"] == 120.0 and data["seed"] == 4
    assert data["policies"] == {
        "routing": {"name": "jsq"},
        "batching": {"name": "lab", "params": {"max_length_ratio": 1.5}},
        "window": {"name": "static", "params": {"gamma": 4}},
    }
    awc = scenario(setup, name="x", dataset="gsm8k", num_drafts=600, rtt_ms=30.0,
                   stack=STACKS["s4"])  # fmt: skip
    assert awc["policies"]["window"] == {"name": "awc", "params": {"queue_capacity": 12}}
    assert awc["workload"]["dataset"] == "gsm8k"


@pytest.mark.parametrize("rounds", CROSSOVER_MODES)
def test_compat_scenario_adds_dsdsims_simplifications_and_the_drain(rounds: RoundMode) -> None:
    """A compat run is its physical run plus DSD-Sim's simplifications, round records for
    its TPOT, and arrivals stopped at the horizon with as long again to drain."""
    setup = replace(DsdSetup(), duration_s=40.0)
    physical, compat = (
        scenario(replace(setup, cost_mode=mode), name="x", dataset="gsm8k", num_drafts=600,
                 rtt_ms=60.0, rounds=rounds)
        for mode in COST_MODES
    )  # fmt: skip
    mode = "distributed" if rounds == "distributed" else "fused"
    assert physical["mode"] == compat["mode"] == mode
    assert physical["fused_rounds"] == ("colocated" if rounds == "colocated" else "cloud_only")
    for key in ("dsdsim_compat", "cloud_only_draft_pass", "record_rounds"):
        assert key not in physical
    assert "arrivals_until_s" not in physical["workload"] and physical["duration_s"] == 40.0
    assert compat["dsdsim_compat"] == {
        "one_pass_drafting": True, "fixed_rounds": True, "unqueued_fused": True
    }  # fmt: skip
    # the wasted draft pass goes with cloud-only rounds (a distributed run's fused decisions)
    assert compat["cloud_only_draft_pass"] is (rounds != "colocated")
    assert compat["record_rounds"] is True
    assert compat["workload"]["arrivals_until_s"] == 40.0  # the horizon
    assert compat["duration_s"] == 80.0  # and the drain
    # nothing else differs
    rest = {k: v for k, v in compat.items() if k not in {"dsdsim_compat", "cloud_only_draft_pass",
                                                         "record_rounds"}}  # fmt: skip
    rest["duration_s"] = physical["duration_s"]
    rest["workload"] = {k: v for k, v in compat["workload"].items() if k != "arrivals_until_s"}
    assert rest == physical


def test_scenario_dicts_are_valid_in_both_modes() -> None:
    from edgespec.sim.setup.scenario import scenario_from_dict

    for mode in COST_MODES:
        setup = replace(DsdSetup(), cost_mode=mode, fleet_share=0.25)
        for rounds in CROSSOVER_MODES:
            data = scenario(setup, name="x", dataset="humaneval", num_drafts=600, rtt_ms=10.0,
                            stack=STACKS["s4"], rounds=rounds)  # fmt: skip
            built = scenario_from_dict(data)
            assert (built.dsdsim_compat is not None) is (mode == "dsdsim_compat")
            assert built.record_rounds is (mode == "dsdsim_compat")
            assert built.workload.think_distribution == "lognormal"


def _round(start: float, end: float, down: float, drafted: int, accepted: int, committed: int,
           fused: bool = False) -> RoundRecord:  # fmt: skip
    return RoundRecord("r", 0, start, end, 0.01, 0.02, 0.0, 0.05, down, drafted, accepted,
                       committed, 1, fused=fused)  # fmt: skip


def test_dsdsim_tpot_sums_round_time_over_the_tokens_of_accepting_rounds() -> None:
    sink = DsdSimTpot()
    assert sink.tpot_s is None
    sink.round(_round(0.0, 0.5, 0.05, 4, 3, 4))  # distributed: its downlink counts; 3 tokens
    sink.round(_round(1.0, 1.3, 0.1, 0, 0, 1, fused=True))  # cloud-only: 0.2 s, its 1 token
    sink.round(_round(2.0, 2.4, 0.05, 4, 0, 1))  # nothing accepted: left out
    sink.round(_round(3.0, 3.5, 0.1, 3, 2, 3, fused=True))  # colocated: 0.4 s, 2 tokens
    assert sink.num_tokens == 6
    assert sink.round_time_s == pytest.approx(0.5 + 0.2 + 0.4)
    assert sink.tpot_s == pytest.approx(1.1 / 6)
    only_rejected = DsdSimTpot()
    only_rejected.round(_round(0.0, 0.4, 0.05, 4, 0, 1))
    assert only_rejected.tpot_s is None


def test_summarise_gives_throughput_over_the_horizon_and_the_modes_tpot() -> None:
    """Throughput counts completions over the horizon (compat: the drain's too); TTFT is
    DSD-Sim's (from the draft's start) with the arrival one beside; TPOT is DSD-Sim's when
    given (compat), else the per-request mean, which is kept beside in both modes."""
    waited = RequestRecord("r", "d", "c", 0, 0.0, 1.0, 2.0, 4, 3, 1, 2, 1, device_wait_s=0.6)
    alone = RequestRecord("s", "d", "c", 0, 1.0, 1.2, 2.0, 4, 3, 1, 2, 1)
    metrics = summarize([waited, alone], [], duration_s=8.0, num_servers=1)
    physical = summarise(metrics, 4.0, None)
    assert physical.num_requests == 2
    assert physical.throughput_requests_per_s == pytest.approx(2 / 4.0)  # not over the 8 s
    assert physical.ttft_ms == pytest.approx((0.4 + 0.2) / 2 * 1e3)
    assert physical.ttft_from_arrival_ms == pytest.approx((1.0 + 0.2) / 2 * 1e3)
    assert physical.tpot_ms == physical.request_tpot_ms == pytest.approx((0.5 + 0.4) / 2 * 1e3)
    compat = summarise(metrics, 4.0, 0.031)
    assert compat.tpot_ms == pytest.approx(31.0)
    assert compat.request_tpot_ms == pytest.approx(450.0)
    assert replace(compat, tpot_ms=physical.tpot_ms) == physical
    empty = summarise(summarize([], [], duration_s=8.0, num_servers=1), 4.0, None)
    assert (empty.throughput_requests_per_s, empty.num_requests) == (0.0, 0)
    assert (empty.ttft_ms, empty.tpot_ms, empty.request_tpot_ms) == (None, None, None)


def test_ttft_row_judges_dsd_sims_ttft_and_prints_the_arrival_one_beside() -> None:
    runs = {
        stack_name(s): replace(run(25.0, 340.0, 40.0), ttft_from_arrival_ms=1500.0) for s in STACKS
    }
    ttft = stack_rows(DsdResults(PLAN, runs))[2]
    assert (
        ttft.ours
        == "340 → 340 → 340 → 340 → 340 ms (from arrival: 1500 → 1500 → 1500 → 1500 → 1500 ms)"
    )
    assert (ttft.direction_ok, ttft.magnitude_ok) == (True, True)


@MODES
def test_misses_carry_the_cause_their_claim_states(mode: CostMode) -> None:
    """Misses with the numbers the full run gives, each with its mode's stated cause."""
    plan, why = PLAN.in_mode(mode), CAUSES[mode]
    runs = {}
    for n, jsq, rr in ((400, 40.0, 41.1), (1000, 60.0, 61.5), (1400, 80.0, 81.2)):
        runs[routing_name("jsq", n)] = run(20.0, 300.0, jsq)
        runs[routing_name("round_robin", n)] = run(20.0, 300.0, rr)
        runs[batching_name("fcfs", n)] = run(30.0, 300.0, jsq)
        runs[batching_name("lab", n)] = run(30.0, 300.0, jsq + 3.0)
    gap, catch_up = routing_rows(DsdResults(plan, runs))
    assert gap.outcome is Outcome.DIRECTION_ONLY and gap.reason == why.routing
    assert catch_up.outcome is Outcome.MISS and catch_up.cause is Cause.MISSING_INPUT
    assert catch_up.reason == catch_up_reason(
        [(400, 1.1), (1000, 1.5), (1400, 1.2)], (1000, 1400, 0.0)
    )
    lab, _ = batching_rows(DsdResults(plan, runs))  # padded batches: judged, LAB's rule
    assert lab.outcome is Outcome.MISS and lab.reason == why.batching
    assert lab.cause is why.batching.cause and lab.why.startswith(str(why.batching))
    lab, _ = batching_rows(DsdResults(SUMMED.in_mode(mode), runs))
    assert lab.outcome is Outcome.NOT_JUDGED and lab.reason == why.batching  # by construction
    worse = table_rows(_table(0.95, 41.0, mode))
    assert all(r.reason == why.awc and r.cause is why.awc.cause for r in worse[:4])
    cells = by_what(table_rows(DsdResults(plan, {}))[4:], mode)
    # the fitted cell's throughput is the think time's setting; another cell's is judged
    fitted = cells["Table 2 C1 gsm8k thr (Static / Dynamic / AWC)"]
    assert fitted.outcome is Outcome.SETTING and fitted.cause is None
    assert fitted.setting.startswith("shown, not judged: the think time is fitted")
    thr = cells["Table 2 C2 gsm8k thr (Static / Dynamic / AWC)"]
    assert thr.outcome is Outcome.MISS and thr.reason == table_throughput_reason("gsm8k", "C2")
    assert thr.why == str(thr.reason)
    humaneval = DsdPlan(DsdSetup(), ("humaneval",), ("C1",), PLAN.crossover_rtts_ms, (400,))
    ttft = [r for r in table_rows(DsdResults(humaneval.in_mode(mode), {})) if "ttft" in r.what]
    assert ttft[0].outcome is Outcome.MISS and ttft[0].reason == why.table_ttft
    tpot = [r for r in table_rows(DsdResults(humaneval.in_mode(mode), {})) if "tpot" in r.what]
    assert tpot[0].reason == why.table_tpot


@MODES
def test_quick_run_marks_every_magnitude_but_the_crossover(mode: CostMode) -> None:
    full = PLAN.in_mode(mode)
    quick = replace(full, setup=replace(DsdPlan.quick().setup, cost_mode=mode))
    assert quick_run(DsdResults(full, {})) == ""
    assert quick_run(DsdResults(quick, {})).startswith(
        "40 s runs on 25% of the fleet (full: 120 s, all of it)"
    )
    # either shortening alone makes a quick run
    shorter = replace(full, setup=replace(full.setup, duration_s=40.0))
    smaller = replace(full, setup=replace(full.setup, fleet_share=0.25))
    assert quick_run(DsdResults(shorter, {})) and quick_run(DsdResults(smaller, {}))
    thr = {"default": 9.33, "s1": 10.0, "s2": 10.5, "s3": 11.0, "s4": 14.83}
    runs = {stack_name(s): run(thr[s], 168.0, 43.0) for s in STACKS}
    rows = stack_rows(DsdResults(quick, runs))
    absolute = rows[3]  # default: 168 ms TTFT, 43 ms TPOT against 45: within
    assert absolute.magnitude_ok is True and absolute.outcome is Outcome.QUICK
    runs[stack_name("default")] = run(thr["default"], 168.0, 70.0)
    absolute = stack_rows(DsdResults(quick, runs))[3]  # TPOT +56%
    assert absolute.magnitude_ok is False and absolute.outcome is Outcome.QUICK
    assert absolute.cause is Cause.QUICK_RUN and "(quick run)" in absolute.verdict
    gain = rows[0]  # +58.9%: its size is shown, never judged; the chain rises
    assert (gain.direction_ok, gain.magnitude_ok, gain.outcome) == (True, None, Outcome.HOLDS)
    # a wrong direction stays a miss with its own cause
    runs[stack_name("s4")] = run(9.0, 168.0, 43.0)
    runs[stack_name("default")] = run(thr["default"], 168.0, 43.0)
    gain, cut = stack_rows(DsdResults(quick, runs))[:2]
    assert gain.outcome is Outcome.MISS
    assert gain.reason == policies_reason([("S3 → S4 (adds AWC)", "s4")], "lowers throughput")
    # TPOT flat (no cut): a miss, its magnitude marked; no step reverses: the family's cause
    assert cut.outcome is Outcome.MISS and cut.reason == CAUSES[mode].stack_tpot
    assert cut.why.endswith("; magnitude not compared (quick run)")
    judged = [r for r in all_rows(DsdResults(quick, {})) if r.magnitude_ok is not None]
    assert all(r.quick_run for r in judged if r.claim_id != "D3")
    assert crossover_rows(DsdResults(quick, {}))[0].quick_run == ""
    assert not any(r.quick_run for r in all_rows(DsdResults(full, {})))
