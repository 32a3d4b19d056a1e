"""The variant fleet (DSD-Sim's TP-1 targets) as a sensitivity: outside the inputs chosen
once, never judged (not even as a quick run's "not comparable"), its finding saying what the
runs show; the causes of D6's catch-up row (from the run's gaps) and of the compat AWC rows
(the WC-DNN: compat mode already runs DSD-Sim's unqueued fused rounds)."""

from __future__ import annotations

from dataclasses import replace

from edgespec.reproduce.claims import Cause, Outcome, Reason
from edgespec.reproduce.dsd.causes import CAUSES, PHYSICAL, WC_DNN, catch_up_reason
from edgespec.reproduce.dsd.choices import CHOICES, SENSITIVITIES
from edgespec.reproduce.dsd.crossover_claims import crossover_rows, crossover_rtt_ms
from edgespec.reproduce.dsd.findings import findings
from edgespec.reproduce.dsd.runs import DsdPlan, DsdResults, crossover_name, routing_name
from edgespec.reproduce.dsd.sweep_claims import not_comparable, routing_rows
from tests.reproduce.dsd.results_inputs import PLAN, crossover, run

LOAD = (
    "the load (not given: a closed loop is chosen, its one think time fitted to Table 2's "
    "GSM8K C1 Static cell)"
)
SHARE = (
    "round-robin gives every target the same share, the 4×A6000 servers (69.2 ms a pass) as "
    "many requests as the 4×H100 ones (19.1 ms), and JSQ's balancing pays until the whole "
    f"fleet saturates, a point {LOAD} decides"
)


def _variant(res: DsdResults, tpots: dict[float, tuple[float, float]]) -> DsdResults:
    runs = dict(res.runs)
    for rtt, (dist, cloud) in tpots.items():
        runs[crossover_name("distributed", rtt, variant=True)] = run(20.0, 300.0, dist)
        runs[crossover_name("cloud_only", rtt, variant=True)] = run(20.0, 300.0, cloud)
    return DsdResults(res.plan, runs)


def test_the_variant_fleet_is_a_sensitivity_shown_not_judged() -> None:
    """A plan with variant RTTs shows D3 a second time on DSD-Sim's TP-1 targets, over the
    paper's two round modes only: a sensitivity, its would-be verdicts in its note, never
    judged (D3 is judged once, on the paper's 4-GPU servers), with no cause."""
    plan = replace(PLAN, variant_rtts_ms=(10.0, 60.0))
    res = crossover([30.0, 40.0, 52.0, 70.0], [50.0] * 4, [50.0] * 4, plan=plan)
    runs = dict(res.runs)
    for rtt, dist, cloud in ((10.0, 80.0, 120.0), (60.0, 130.0, 120.0)):
        runs[crossover_name("distributed", rtt, variant=True)] = run(20.0, 300.0, dist)
        runs[crossover_name("cloud_only", rtt, variant=True)] = run(20.0, 300.0, cloud)
    res = DsdResults(plan, runs)
    primary, variant = crossover_rows(res)
    assert primary.ours == "60 ms" and variant.ours == "60 ms"
    assert primary.outcome is Outcome.HOLDS
    assert crossover_rtt_ms(res, variant=True) == 60.0
    assert variant.what.endswith("(GSM8K, 600 drafts, DSD-Sim's TP-1 targets, the variant)")
    assert (variant.direction_ok, variant.magnitude_ok) == (None, None)
    assert (variant.outcome, variant.reason, variant.why) == (Outcome.NOT_JUDGED, None, "")
    assert variant.tolerance == "not judged (a sensitivity)"
    assert variant.note == (
        "a sensitivity, not judged: DSD-Sim's shipped TP-1 targets in place of the paper's "
        "4-GPU servers, on which D3 is judged once; judged like them (distributed wins at low "
        "RTT and degrades; crossover in 35–80 ms), it would give direction ✓, magnitude ✓; "
        "TPOT ms, distributed / cloud-only: 10 ms: 80.0 / 120.0; 60 ms: 130.0 / 120.0"
    )
    runs[crossover_name("cloud_only", 60.0, variant=True)] = run(20.0, 300.0, 131.0)
    missed = crossover_rows(DsdResults(plan, runs))[1]
    assert missed.ours == "none in the sweep" and missed.outcome is Outcome.NOT_JUDGED
    assert "it would give direction ✗, magnitude ✗; TPOT ms" in missed.note
    assert missed.reason is None and missed.why == ""


def test_d3_is_a_setting_where_the_reading_of_the_fused_mode_decides_it() -> None:
    """Cloud-only (DSD-Sim's fused rounds) crosses at 60 ms, in 35–80 ms; colocated rounds
    (§4.4's text: the server drafts and verifies) judged alike on the same runs give the
    other outcome: the reading decides the verdict, so D3 is shown as a setting with both
    (it was judged on cloud-only alone, a hold). The same outcome both ways, or no
    colocated runs, leaves it judged."""
    dist, cloud = [30.0, 40.0, 52.0, 70.0], [50.0] * 4
    (decided,) = crossover_rows(crossover(dist, cloud, [20.0] * 4))
    assert decided.outcome is Outcome.SETTING and decided.ours == "60 ms"
    assert decided.setting == (
        "the reading of DSD's fused mode decides it (SEED-NOTES §4.4 item 4): cloud-only, one "
        "target token per pass as DSD-Sim runs it, direction ✓, magnitude ✓; colocated rounds, "
        "the target's server drafting and verifying as §4.4's text reads, crossing at "
        f"{PLAN.crossover_rtts_ms[0]:g} ms, direction ✗, magnitude ✗"
    )
    (both,) = crossover_rows(crossover(dist, cloud, [51.0] * 4))
    assert both.outcome is Outcome.HOLDS and not both.setting
    runs = {k: v for k, v in crossover(dist, cloud).runs.items() if "colocated" not in k}
    (alone,) = crossover_rows(DsdResults(PLAN, runs))
    assert alone.outcome is Outcome.HOLDS


def test_the_variant_fleet_is_listed_apart_from_the_inputs_chosen_once() -> None:
    chosen = dict(CHOICES)
    assert chosen["targets"].endswith("one pass 27.8 / 19.1 / 69.2 ms)")
    assert not any("variant" in why or "TP-1" in why for why in chosen.values())
    ((name, what),) = SENSITIVITIES
    assert name == "the variant fleet (D3 only)"
    assert what.startswith("DSD-Sim's shipped targets at tensor-parallel 1 (`a100`, `h100`")
    assert what.endswith("not judged; D3 is judged on the paper's fleet alone")


def test_a_quick_run_leaves_the_sensitivity_not_judged() -> None:
    plan = replace(PLAN, setup=DsdPlan.quick().setup, variant_rtts_ms=(10.0, 60.0))
    res = crossover([30.0, 40.0, 52.0, 70.0], [50.0] * 4, plan=plan)
    res = _variant(res, {10.0: (80.0, 120.0), 60.0: (130.0, 120.0)})  # full: ✓, ✓
    primary, variant = (not_comparable(r, res) for r in crossover_rows(res))
    assert primary.outcome is Outcome.QUICK and primary.cause is Cause.QUICK_RUN
    assert (variant.outcome, variant.quick_run, variant.magnitude_ok) == (
        Outcome.NOT_JUDGED,
        "",
        None,
    )
    # its would-be verdicts are as the quick run judges D3: neither
    assert variant.note.startswith(
        "a sensitivity, not judged: DSD-Sim's shipped TP-1 targets in place of the paper's "
        "4-GPU servers, on which D3 is judged once; judged like them (distributed wins at low "
        "RTT and degrades; crossover in 35–80 ms), it would give direction –, magnitude – "
        "(quick run); TPOT ms"
    )


def test_the_fleet_finding_says_the_tp1_fleet_gives_no_crossover() -> None:
    plan = replace(PLAN, variant_rtts_ms=(10.0, 60.0))
    res = crossover([30.0, 40.0, 52.0, 70.0], [50.0] * 4, [50.0] * 4, plan=plan)
    none = _variant(res, {10.0: (80.0, 120.0), 60.0: (130.0, 131.0)})
    fleet = findings([none])[3]
    assert (fleet.claims, fleet.cause) == ("D3", Cause.SIMPLIFICATION)
    assert fleet.shown_by == (
        "D3's rows, crossover by fleet: physical: 4-GPU 60 ms, TP-1 no crossover in 10–60 ms"
    )
    assert fleet.line.endswith(
        "(`tensor_parallel: 1`, a 70B model on one GPU). On them cloud-only never overtakes "
        "distributed within the swept RTTs, so the paper's ≈ 50–60 ms cannot come from them; "
        "D3 is judged on the paper's fleet, the TP-1 rows shown as a sensitivity."
    )
    assert "n/a" not in fleet.shown_by
    crosses = findings([_variant(res, {10.0: (80.0, 120.0), 60.0: (130.0, 120.0)})])[3]
    assert crosses.shown_by.endswith("4-GPU 60 ms, TP-1 60 ms")
    assert crosses.line.endswith("The fleet decides where cloud-only TPOT crosses distributed.")


def test_rr_catch_up_cause_says_how_the_runs_gap_moved() -> None:
    # the full run's physical gaps: growing to +58.3 ms at 1,600 drafts, +53.7 at 2,000
    gaps = [(400, 1.9), (600, 2.7), (1000, 21.4), (1600, 58.3), (2000, 53.7)]
    assert catch_up_reason(gaps, (1600, 2000, 0.2)) == Reason(
        Cause.MISSING_INPUT,
        "RR never catches up: its TPOT gap to JSQ grows from +1.9 ms at 400 drafts to +58.3 "
        f"ms at 1600 (+53.7 ms at 2000): {SHARE}; JSQ's throughput grows +20.0% from 1600 "
        "to 2000 drafts",
    )
    late = catch_up_reason([(400, 5.0), (1600, -1.0)], None)
    assert late.line == f"RR catches up at 1600 drafts: {SHARE}"
    runs = {}
    for n, jsq_thr, rr_tpot in ((400, 10.0, 52.0), (1000, 20.0, 61.0), (1400, 22.0, 75.0)):
        runs[routing_name("jsq", n)] = run(jsq_thr, 300.0, 50.0)
        runs[routing_name("round_robin", n)] = run(jsq_thr, 300.0, rr_tpot)
    _, row = routing_rows(DsdResults(PLAN, runs))
    assert row.outcome is Outcome.MISS
    assert row.why == (
        "an input the paper does not give — RR never catches up: its TPOT gap to JSQ grows "
        f"from +2.0 ms at 400 drafts to +25.0 ms at 1400: {SHARE}; JSQ's throughput grows "
        "+10.0% from 1000 to 1400 drafts"
    )
    assert "narrow" not in row.why


def test_compat_awc_rows_carry_the_wc_dnn_not_the_unqueued_fused_rounds() -> None:
    compat = CAUSES["dsdsim_compat"].awc
    assert compat == PHYSICAL.awc == Reason(Cause.MISSING_INPUT, WC_DNN)
    assert "fused_execute" not in compat.line
