"""DSD's stack, crossover and TTFT rows from hand-built run summaries, in both cost modes:
each verdict flips when the numbers do; each miss carries the cause its claim states in its
mode, every row its mode's tag, and a quick run's magnitudes are marked."""

from __future__ import annotations

from dataclasses import replace

from edgespec.reproduce.claims import Cause, Outcome
from edgespec.reproduce.dsd.causes import (
    CAUSES,
    MODE_TAGS,
    policies_reason,
    tagged,
)
from edgespec.reproduce.dsd.crossover_claims import crossover_rows, crossover_rtt_ms
from edgespec.reproduce.dsd.runs import (
    DsdResults,
    crossover_name,
    stack_name,
)
from edgespec.reproduce.dsd.setup import (
    STACKS,
    CostMode,
)
from edgespec.reproduce.dsd.stack_claims import stack_rows
from tests.reproduce.dsd.results_inputs import MODES, PLAN, SUMMED, crossover, run


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
