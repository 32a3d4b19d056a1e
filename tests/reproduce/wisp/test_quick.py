"""What the quick run leaves out, read off the two plans (edgespec/reproduce/wisp/quick.py)."""

from __future__ import annotations

from dataclasses import replace

from edgespec.reproduce.report_file import left_out_markdown
from edgespec.reproduce.wisp.predictor import PredictorPlan
from edgespec.reproduce.wisp.quick import left_out, runs_quick_run, study_quick_run
from edgespec.reproduce.wisp.runs import Plan


def test_the_full_run_leaves_nothing_out() -> None:
    assert left_out(Plan.full(), PredictorPlan.full()) == []
    assert left_out_markdown([]) == []


def test_the_quick_run_names_the_claims_it_does_not_run_first() -> None:
    items = left_out(Plan.quick(), PredictorPlan.quick())
    assert items[:4] == [
        "W2 (qwen3-14b capacities of WISP, centralized and SLED, every class): not run",
        "W1 at 4 and 6 tok/s (the capacities and the centralized setting there): not run, "
        "only 2 and 8 tok/s",
        "WISP without its predictor's capacities (qwen3-32b, W1's notes): not searched",
        "W8 at N = 4 and 8 (its gains there and the non-decreasing check over them): not run, "
        "only N = 2 and 16",
    ]
    assert "W4's operating point: at most 1 FCFS probe (full: 4)" in items
    assert "W4's violation curves: N = 60, 120, 180 (full: 40–400, 19 points)" in items
    assert items[-1] == (
        "every simulated run (W1, W3, W4, W5, W7, W8): 60 s runs (full: 300 s), outputs of 60 "
        "tokens on average (full: 150), first requests spread over 5 s (full: 10 s)"
    )
    # W1–W5's runs and W7–W8's are two plans: where they shorten differently, each says so
    longer = replace(PredictorPlan.quick(), setup=PredictorPlan.full().setup)
    assert left_out(Plan.quick(), longer)[-1] == (
        "W1, W3, W4 and W5's simulated runs: 60 s runs (full: 300 s), outputs of 60 tokens on "
        "average (full: 150), first requests spread over 5 s (full: 10 s)"
    )
    assert left_out(Plan.full(), PredictorPlan.quick())[-1] == (
        "W7 and W8's simulated runs: 60 s runs (full: 300 s), outputs of 60 tokens on average "
        "(full: 150), first requests spread over 5 s (full: 10 s)"
    )
    # a plan that changes is described as it is: W8 at every N but 16 runs here
    wider = replace(PredictorPlan.quick(), goodput_devices=(2, 4, 8))
    assert (
        "W8 at N = 16 (its gains there and the non-decreasing check over them): not run, "
        "only N = 2, 4 and 8" in left_out(Plan.quick(), wider)
    )
    text = "\n".join(left_out_markdown(items))
    assert text.startswith("## What the quick run leaves out\n\n- W2 (qwen3-14b")


def test_the_predictor_claims_name_what_the_quick_plan_shortened() -> None:
    """W6's FPRs depend on the study's searches and training, W7's and W8's goodputs on the
    simulated runs (W7's on its devices too): a quick plan names what it cut, so its rows
    do not compare those magnitudes; the full plan cuts nothing, and its rows judge them."""
    quick, full = PredictorPlan.quick(), PredictorPlan.full()
    assert study_quick_run(quick) == (
        "1 MLP trial of at most 8 epochs (full: 8 of 60), 1 trial per tree (full: 6)"
    )
    assert runs_quick_run(quick, devices=True) == (
        "4 devices (full: 8), 60 s runs (full: 300 s), outputs of 60 tokens on average (full: 150)"
    )
    assert runs_quick_run(quick) == (
        "60 s runs (full: 300 s), outputs of 60 tokens on average (full: 150)"
    )
    assert study_quick_run(full) == runs_quick_run(full, devices=True) == ""
    trees = replace(full, study=replace(full.study, tree_trials=2))  # one cut alone
    assert study_quick_run(trees) == "2 trials per tree (full: 6)"
