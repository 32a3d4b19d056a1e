"""Properties of every DSD row (:func:`all_rows`): missing runs give misses, every row
carries its mode's tag and a cause of the families its mode uses, misses carry the cause
their claim states, and a quick run marks every magnitude but the crossover."""

from __future__ import annotations

from dataclasses import fields, replace

from edgespec.reproduce.claims import Cause, ClaimRow, Outcome
from edgespec.reproduce.dsd.causes import (
    CAUSES,
    MODE_TAGS,
    UNSATURATED,
    catch_up_reason,
    policies_reason,
    table_throughput_reason,
)
from edgespec.reproduce.dsd.claims import all_rows, table_rows
from edgespec.reproduce.dsd.crossover_claims import crossover_rows
from edgespec.reproduce.dsd.runs import (
    DsdPlan,
    DsdResults,
    batching_name,
    routing_name,
    stack_name,
)
from edgespec.reproduce.dsd.setup import (
    STACKS,
    CostMode,
    DsdSetup,
)
from edgespec.reproduce.dsd.stack_claims import stack_rows
from edgespec.reproduce.dsd.sweep_claims import batching_rows, quick_run, routing_rows
from tests.reproduce.dsd.results_inputs import (
    MODES,
    PLAN,
    SUMMED,
    by_what,
    run,
    table_results,
)


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
        if row.outcome is Outcome.UNREACHED:  # D7's equal throughput: no saturation shown
            assert "saturated" in row.what and row.unreached.startswith("the targets are not")
            continue
        if row.outcome is Outcome.SETTING:  # the think time's fit: no cause shown
            assert what[2:5] == ["C1", "gsm8k", "thr"] and row.cause is None
            continue
        assert row.outcome is not Outcome.HOLDS and row.cause is reason.cause
        assert row.why.startswith(str(reason))
    assert families == {f.name for f in fields(CAUSES[mode])}  # every family is used


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
    worse = table_rows(table_results(0.95, 41.0, mode))
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


def test_the_wc_dnn_cause_names_the_training_and_judged_loads() -> None:
    """The AWC rows' cause says how the WC-DNN's training runs differ from the judged ones
    (their think times, from the code, so the line cannot drift from them)."""
    from edgespec.learn.awc.grid import THINK
    from edgespec.reproduce.dsd.causes import WC_DNN

    assert f"{THINK['think_time_s']} s think time" in WC_DNN
    assert f"fitted {DsdSetup().think_mean_s:.2f} s think time" in WC_DNN
