"""DSD's claim rows D2–D7 at the edges of their verdicts: ties, the ends of each accepted
band, the tolerances just inside and just beyond, and D7's saturation bound."""

from __future__ import annotations

from dataclasses import replace

from edgespec.reproduce.dsd.causes import tagged
from edgespec.reproduce.dsd.claims import table_rows
from edgespec.reproduce.dsd.crossover_claims import crossover_rows, crossover_rtt_ms
from edgespec.reproduce.dsd.paper import PAPER_TABLE2
from edgespec.reproduce.dsd.runs import (
    DsdPlan,
    DsdResults,
    batching_name,
    crossover_name,
    routing_name,
    stack_name,
    table_name,
)
from edgespec.reproduce.dsd.setup import STACKS, DsdSetup
from edgespec.reproduce.dsd.stack_claims import stack_rows
from edgespec.reproduce.dsd.sweep_claims import SATURATED, batching_rows, routing_rows
from tests.reproduce.dsd.results_inputs import PLAN, by_what, crossover, run


def _stacks(
    thr: tuple[float, ...], tpot: tuple[float, ...], ttft: tuple[float, ...] = (350.0,) * 5
) -> DsdResults:
    return DsdResults(
        PLAN,
        {
            stack_name(s): run(*v)
            for s, v in zip(STACKS, zip(thr, ttft, tpot, strict=True), strict=True)
        },
    )


def test_d2_ties_zero_changes_and_the_relative_tolerance() -> None:
    tpot = (45.0, 44.0, 43.0, 40.0, 37.0)
    gain, *_ = stack_rows(_stacks((25.0, 25.0, 26.0, 27.0, 28.0), tpot))
    assert gain.direction_ok is True  # a flat step is still monotone
    # the gain's size is shown, never judged (the load makes it the latencies'): +15.2%, 27%
    # beyond the paper's +12.0%, is no miss, and the TPOT row judges the cut
    beyond = stack_rows(_stacks((25.0, 25.5, 26.0, 27.0, 28.8), tpot))
    assert (beyond[0].magnitude_ok, beyond[1].magnitude_ok) == (None, True)
    flat = stack_rows(_stacks((25.0,) * 5, (45.0,) * 5))
    assert (flat[0].ours, flat[0].direction_ok) == (
        "25.00 → 25.00 → 25.00 → 25.00 → 25.00 (+0.0%)",
        False,
    )
    assert (flat[1].direction_ok, flat[2].direction_ok) == (False, True)  # TPOT must fall


def test_d2_ttft_compares_each_stack_with_its_own_paper_number() -> None:
    thr, tpot = (25.0, 25.5, 26.0, 27.0, 28.0), (45.0, 44.0, 43.0, 40.0, 37.0)
    # 520 ms lies within 351 ± 50% (≤ 526.5) but not within 345 ± 50% (≤ 517.5)
    ttft = stack_rows(_stacks(thr, tpot, (520.0,) * 5))[2]
    assert (ttft.direction_ok, ttft.magnitude_ok) == (True, False)
    ttft = stack_rows(_stacks(thr, tpot, (530.0, 350.0, 350.0, 350.0, 300.0)))[2]
    assert (ttft.direction_ok, ttft.magnitude_ok) == (True, False)  # Default beyond 526.5


def test_d2_absolute_rows_judge_tpot_and_show_the_fitted_throughput() -> None:
    rows = stack_rows(_stacks((25.0, 25.5, 26.0, 27.0, 43.0), (70.0, 44.0, 43.0, 40.0, 37.0)))
    default, s4 = rows[3], rows[4]
    assert (default.ours, default.magnitude_ok) == ("25.00 req/s, 70.0 ms", False)  # 45 ms + 56%
    # 28.1 req/s + 53%: the throughput in the fitted configuration is shown, not judged
    assert (s4.ours, s4.magnitude_ok) == ("43.00 req/s, 37.0 ms", True)
    assert s4.tolerance.startswith("TPOT ±50% (throughput: shown, not judged: the think time")
    rows = stack_rows(_stacks((25.0, 25.5, 26.0, 27.0, 42.15), (67.5, 44.0, 43.0, 40.0, 55.5)))
    assert (rows[3].magnitude_ok, rows[4].magnitude_ok) == (True, True)  # both exactly +50%
    rows = stack_rows(_stacks((25.0, 25.5, 26.0, 27.0, 42.15), (67.6, 44.0, 43.0, 40.0, 55.6)))
    assert (rows[3].magnitude_ok, rows[4].magnitude_ok) == (False, False)  # just past +50%


def test_d3_ties_and_the_ends_of_the_accepted_band() -> None:
    (row,) = crossover_rows(crossover([30.0, 40.0, 50.0, 70.0], [50.0] * 4))
    assert (row.ours, row.direction_ok, row.magnitude_ok) == ("60 ms", True, True)  # a tie: fused
    (row,) = crossover_rows(crossover([30.0, 60.0, 60.0, 30.0], [50.0, 50.0, 50.0, 25.0]))
    assert (row.ours, row.direction_ok) == ("40 ms", False)  # distributed does not degrade
    (row,) = crossover_rows(crossover([50.0, 60.0, 70.0, 80.0], [50.0] * 4))
    assert (row.ours, row.direction_ok) == ("10 ms", False)  # no distributed win at low RTT
    band = DsdPlan(DsdSetup(), ("gsm8k",), ("C1",), (10.0, 35.0, 80.0, 120.0), (400,))
    for dist, expected in (
        ([30.0, 55.0, 60.0, 70.0], "35 ms"),
        ([30.0, 40.0, 55.0, 70.0], "80 ms"),
    ):
        (row,) = crossover_rows(crossover(dist, [50.0] * 4, plan=band))
        assert (row.ours, row.direction_ok, row.magnitude_ok) == (expected, True, True)
    # just beyond either end of the band
    beyond = DsdPlan(DsdSetup(), ("gsm8k",), ("C1",), (10.0, 34.0, 81.0, 120.0), (400,))
    for dist, expected in (
        ([30.0, 55.0, 60.0, 70.0], "34 ms"),
        ([30.0, 40.0, 55.0, 70.0], "81 ms"),
    ):
        (row,) = crossover_rows(crossover(dist, [50.0] * 4, plan=beyond))
        assert (row.ours, row.direction_ok, row.magnitude_ok) == (expected, True, False)


def test_d3_a_colocated_tie_crosses_and_a_missing_run_stops_the_search() -> None:
    res = crossover([30.0, 40.0, 50.0, 70.0], [50.0] * 4, [30.0, 45.0, 50.0, 60.0])
    assert crossover_rtt_ms(res, "colocated") == 60.0  # a tie at 60 ms counts
    runs = dict(res.runs)
    del runs[crossover_name("cloud_only", 40.0)]
    res = DsdResults(PLAN, runs)
    assert crossover_rtt_ms(res) == 60.0  # searched down from the largest RTT
    del runs[crossover_name("distributed", 90.0)]
    (row,) = crossover_rows(DsdResults(PLAN, runs))
    assert (row.ours, row.direction_ok) == ("none in the sweep", False)


CELLS = [(d, c) for d in ("gsm8k", "humaneval", "cnndm") for c in ("C1", "C2", "C3", "C4")]
TWELVE = DsdPlan(
    DsdSetup(), ("gsm8k", "humaneval", "cnndm"), ("C1", "C2", "C3", "C4"), (10.0,), (400,)
)


def _twelve(awc_thr: list[float], awc_tpot: list[float], dynamic_thr: float = 10.0) -> DsdResults:
    """Static 10 req/s and 40 ms in every cell; AWC's per cell."""
    runs = {}
    for (dataset, config), thr, tpot in zip(CELLS, awc_thr, awc_tpot, strict=True):
        for window, t, p in (
            ("static", 10.0, 40.0),
            ("dynamic", dynamic_thr, 40.0),
            ("awc", thr, tpot),
        ):
            runs[table_name(dataset, config, window)] = run(t, 350.0, p)
    return DsdResults(TWELVE, runs)


def test_d4_d5_counts_at_their_thresholds() -> None:
    # 11 of 12 cells with AWC ≥ Static (one tie among them) and 9 of 12 ≥ Dynamic hold
    thr = [10.0] + [11.0] * 8 + [10.4] * 2 + [9.0]
    rows = by_what(table_rows(_twelve(thr, [40.0] + [39.0] * 11, dynamic_thr=10.5))[:4])
    static, mean, tpot, dynamic = (
        rows[w]
        for w in (
            "AWC throughput ≥ Static",
            "mean AWC throughput gain over Static",
            "AWC TPOT below Static",
            "AWC throughput ≥ Dynamic",
        )
    )
    assert (static.ours, static.direction_ok) == ("11 of 12", True)
    assert (dynamic.ours, dynamic.direction_ok) == ("8 of 12", False)
    assert (tpot.ours, tpot.direction_ok) == ("11 of 12", False)  # a TPOT tie is no cut
    assert (static.paper, tpot.paper, dynamic.paper) == ("12 of 12", "12 of 12", "11 of 12")
    rows = by_what(table_rows(_twelve([10.5] * 9 + [9.0] * 3, [39.0] * 12, 10.5))[:4])
    assert (
        rows["AWC throughput ≥ Dynamic"].ours,
        rows["AWC throughput ≥ Dynamic"].direction_ok,
    ) == ("9 of 12", True)
    assert rows["AWC throughput ≥ Static"].direction_ok is False  # 9 of 12
    assert rows["AWC TPOT below Static"].direction_ok is True
    assert mean.ours == f"{(sum(thr) / 120 - 1) * 100:+.1f}%"
    even = by_what(table_rows(_twelve([10.0] * 12, [39.0] * 12))[:4])
    gain = even["mean AWC throughput gain over Static"]
    assert (gain.ours, gain.direction_ok, gain.magnitude_ok) == ("+0.0%", False, False)


def test_table_cells_need_every_window_within_half() -> None:
    rows = [r for r in table_rows(_twelve([10.0] * 12, [39.0] * 12)) if "Table 2" in r.what]
    # gsm8k C1 throughput: 25.8 / 26.1 / 28.3; 10 req/s is beyond 50% below each
    assert rows[0].what == tagged("physical", "Table 2 C1 gsm8k thr (Static / Dynamic / AWC)")
    assert rows[0].magnitude_ok is False
    paper = PAPER_TABLE2[("gsm8k", "C1")]["thr"]
    runs = {
        table_name("gsm8k", "C1", w): run(p, 350.0, 40.0)
        for w, p in zip(("static", "dynamic", "awc"), paper, strict=True)
    }
    one_off = {**runs, table_name("gsm8k", "C1", "awc"): run(50.0, 350.0, 40.0)}
    plan = DsdPlan(DsdSetup(), ("gsm8k",), ("C1",), (10.0,), (400,))
    assert table_rows(DsdResults(plan, runs))[4].magnitude_ok is True
    assert table_rows(DsdResults(plan, one_off))[4].magnitude_ok is False  # AWC alone is off


def _routing(plan: DsdPlan, gaps: dict[int, float]) -> DsdResults:
    runs = {}
    for n, gap in gaps.items():
        runs[routing_name("jsq", n)] = run(20.0, 300.0, 50.0)
        runs[routing_name("round_robin", n)] = run(20.0, 300.0, 50.0 + gap)
    return DsdResults(plan, runs)


def test_d6_bands_and_ties() -> None:
    plan = DsdPlan(DsdSetup(), ("gsm8k",), ("C1",), (10.0,), (400, 750, 999, 1250))
    gap, catch_up = routing_rows(_routing(plan, {400: 2.5, 750: 0.0, 999: 30.0, 1250: -1.0}))
    assert (gap.ours, gap.direction_ok) == ("+2.5, +0.0, +30.0", False)  # a tie is no lead
    assert (catch_up.ours, catch_up.magnitude_ok) == ("750", True)  # a tie catches up
    gap, catch_up = routing_rows(_routing(plan, {400: 2.5, 750: 10.0, 999: 30.0, 1250: 0.0}))
    assert (gap.direction_ok, gap.magnitude_ok) == (True, True)  # 2.5 and 30 ms both inside
    assert (catch_up.ours, catch_up.magnitude_ok) == ("1250", True)
    gap = routing_rows(_routing(plan, {400: 2.4, 750: 10.0, 999: 30.1, 1250: 0.0}))[0]
    assert (gap.direction_ok, gap.magnitude_ok) == (True, False)
    late = DsdPlan(DsdSetup(), ("gsm8k",), ("C1",), (10.0,), (1000, 1400))
    gap, _ = routing_rows(_routing(late, {1000: 10.0, 1400: 5.0}))
    assert (gap.ours, gap.direction_ok, gap.magnitude_ok) == ("n/a", False, False)  # none below 1k


def test_d7_bands_ties_and_the_saturated_point() -> None:
    plan = DsdPlan(DsdSetup(), ("gsm8k",), ("C1",), (10.0,), (400, 1000, 1400))
    summed = replace(plan, setup=replace(plan.setup, batch_pricing="summed"))

    def res(cuts: tuple[float, ...], thr: tuple[float, ...], p: DsdPlan = plan) -> DsdResults:
        runs = {}
        for n, cut, t in zip((400, 1000, 1400), cuts, thr, strict=True):
            runs[batching_name("fcfs", n)] = run(20.0, 300.0, 40.0)
            runs[batching_name("lab", n)] = run(t, 300.0, 40.0 + cut)
        return DsdResults(p, runs)

    lab, top = batching_rows(res((-3.0, -0.5, -1.0), (30.0, 20.0, 20.0)))
    assert (top.direction_ok, top.unreached) == (None, "")  # FIFO flat at 20 req/s: saturated
    # padded batches: LAB's TPOT row is judged, both ends of −3 to −0.5 ms inside the band
    assert (lab.direction_ok, lab.magnitude_ok) == (True, True)
    assert lab.what == tagged("physical", "LAB TPOT − FIFO TPOT")
    assert (top.what, top.ours, top.magnitude_ok) == (
        tagged("physical", "LAB vs FIFO throughput at 1400 drafts (saturated)"),
        "+0.0%",
        True,
    )
    lab, top = batching_rows(res((0.0, -1.0, -3.1), (20.0, 20.0, 21.2)))
    assert (lab.direction_ok, lab.magnitude_ok) == (True, False)  # a tie is not worse; −3.1
    assert (top.ours, top.magnitude_ok) == ("+6.0%", False)
    lab, _ = batching_rows(res((0.1, -1.0, -1.0), (20.0,) * 3))
    assert (lab.direction_ok, lab.magnitude_ok) == (False, False)
    # summed pricing: LAB's TPOT row is never judged (no padding to save): the note says
    # which way it fell
    lab, top = batching_rows(res((-3.0, -0.5, -1.0), (30.0, 20.0, 20.0), summed))
    assert (lab.direction_ok, lab.magnitude_ok) == (None, None)
    assert "(LAB lower at every count: yes)" in lab.note
    assert top.what == tagged("physical", "LAB vs FIFO throughput at 1400 drafts (saturated)")
    lab, _ = batching_rows(res((0.0, -1.0, -3.1), (20.0, 20.0, 21.2), summed))
    assert "(LAB lower at every count: yes)" in lab.note  # a tie is not worse
    assert (
        "(LAB lower at every count: no)"
        in batching_rows(res((0.1, -1.0, -1.0), (20.0,) * 3, summed))[0].note
    )


def test_d7_saturation_bound() -> None:
    """FIFO throughput growing up to 10% between the two largest draft counts counts as
    saturated; just beyond does not. Only those two counts matter."""
    assert SATURATED == 0.1
    plan = DsdPlan(DsdSetup(), ("gsm8k",), ("C1",), (10.0,), (400, 1000, 1400))

    def top(fifo: tuple[float, float, float]) -> tuple[bool, bool | None]:
        """(saturated, LAB's throughput within ±5%)."""
        runs = {}
        for n, t in zip((400, 1000, 1400), fifo, strict=True):
            runs[batching_name("fcfs", n)] = run(t, 300.0, 40.0)
            runs[batching_name("lab", n)] = run(t, 300.0, 39.0)
        row = batching_rows(DsdResults(plan, runs))[1]
        return row.unreached == "", row.magnitude_ok

    assert top((5.0, 20.0, 21.98)) == (True, True)  # +9.9%, however far 400 drafts lay below
    assert top((5.0, 20.0, 22.02)) == (False, True)  # +10.1%
    assert top((20.0, 20.0, 10.0)) == (True, True)  # falling is no growth
