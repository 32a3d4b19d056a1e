"""What the quick run leaves out, read off the two plans (edgespec/reproduce/wisp/quick.py)."""

from __future__ import annotations

from dataclasses import replace

from edgespec.reproduce.wisp.predictor import PredictorPlan
from edgespec.reproduce.wisp.quick import left_out, left_out_markdown
from edgespec.reproduce.wisp.runs import Plan


def test_the_full_run_leaves_nothing_out() -> None:
    assert left_out(Plan.full(), PredictorPlan.full()) == []
    assert left_out_markdown([]) == ""


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
        "tokens on average (full: 150)"
    )
    # a plan that changes is described as it is: W8 at every N but 16 runs here
    wider = replace(PredictorPlan.quick(), goodput_devices=(2, 4, 8))
    assert (
        "W8 at N = 16 (its gains there and the non-decreasing check over them): not run, "
        "only N = 2, 4 and 8" in left_out(Plan.quick(), wider)
    )
    text = left_out_markdown(items)
    assert text.startswith("## What the quick run leaves out\n\n- W2 (qwen3-14b")
