"""The pipeline recursion (Zhu Eqs. 20–22), SD without pipeline, and ADS, by hand."""

from __future__ import annotations

import pytest

from edgespec.policies.drafting_server.costs import ModelDims, PipelineCosts, StageCoefficients
from edgespec.policies.drafting_server.latency import (
    PipelineTask,
    autoregressive_latency_s,
    autoregressive_max_batch,
    inference_latency_s,
    step_latencies_s,
)
from tests.policies.drafting_server.helpers import UNIT, fixed_costs


def tasks(*outputs: int, input_len: int = 4) -> list[PipelineTask]:
    return [PipelineTask(input_len, o) for o in outputs]


def test_pipeline_overlaps_the_next_draft_with_verification() -> None:
    # l = 1: a draft costs 1 s, a verification 2 s, whatever the batch; α = 0 → L = 1, so
    # batch (0,) runs 3 steps and batch (1,) one. Step 1: A drafts 0–1, verifies 1–3; B
    # drafts 1–2 and verifies 3–5. Steps 2 and 3: A alone, 3 s each.
    costs = fixed_costs(1.0, 2.0)
    steps = step_latencies_s(costs, tasks(3, 1), ((0,), (1,)), 1)
    assert steps.tolist() == [5.0, 3.0, 3.0]
    assert inference_latency_s(costs, tasks(3, 1), ((0,), (1,)), 1) == 11.0
    # Without the pipeline B drafts 3–4 and verifies 4–6.
    sequential = step_latencies_s(costs, tasks(3, 1), ((0,), (1,)), 1, pipelined=False)
    assert sequential.tolist() == [6.0, 3.0, 3.0]


def test_draft_bound_pipeline_waits_for_the_drafter() -> None:
    # Drafting 3 s per batch (l = 1), verifying 1 s: three batches drafted back to back end
    # at 3, 6, 9; the last verification ends at 10. Two steps each.
    costs = fixed_costs(3.0, 1.0)
    steps = step_latencies_s(costs, tasks(2, 2, 2), ((0,), (1,), (2,)), 1)
    assert steps.tolist() == [10.0, 10.0]
    # l = 2 doubles the drafting (2·c2 per batch): 6, 12, 18, then 19.
    assert step_latencies_s(costs, tasks(2, 2, 2), ((0,), (1,), (2,)), 2).tolist() == [19.0, 19.0]


def test_batches_pad_to_their_longest_task() -> None:
    costs = fixed_costs(1.0, 1.0)
    # One batch holding an O = 3 task and an O = 1 task runs 3 steps of 2 s.
    assert inference_latency_s(costs, tasks(3, 1), ((0, 1),), 1) == 6.0


def test_batch_order_and_membership_are_checked() -> None:
    costs = fixed_costs(1.0, 1.0)
    with pytest.raises(ValueError, match="each of the 2 tasks once"):
        inference_latency_s(costs, tasks(3, 1), ((0,),), 1)
    with pytest.raises(ValueError, match="each of the 2 tasks once"):
        inference_latency_s(costs, tasks(3, 1), ((0, 1), (1,)), 1)


def test_autoregressive_serving_by_hand() -> None:
    # Verify model J = 1, h1 = h2 = 1: per task 4·new·(3 + cached + new) FLOPs; c1 = 1,
    # c2 = 0.5. One task, I = 2, O = 3: prefill 4·2·(3 + 2) = 40; decode over 2 and 3 cached
    # tokens: 4·6 + 4·7 = 52; three passes of 0.5 s.
    costs = PipelineCosts(
        UNIT, UNIT, StageCoefficients(0, 0), StageCoefficients(1.0, 0.5), 1e9, 0.5
    )
    assert autoregressive_latency_s(costs, [PipelineTask(2, 3)], ((0,),)) == 92.0 + 1.5
    # A batch of two pads to I = 2, O = 3 and costs twice the FLOPs, same passes.
    two = [PipelineTask(1, 3), PipelineTask(2, 2)]
    assert autoregressive_latency_s(costs, two, ((0, 1),)) == 2 * 92.0 + 1.5
    # Eqs. 9–10 on the verify model: 12 weight bytes, 4·(2 + 3) = 20 bytes per task.
    assert autoregressive_max_batch(costs, 72.0, 2, 3) == 3
    assert autoregressive_max_batch(costs, 10.0, 2, 3) == 0


def test_bad_tasks_are_refused() -> None:
    with pytest.raises(ValueError, match="needs >= 1 input and output token"):
        PipelineTask(0, 5)
    with pytest.raises(ValueError, match="spectral efficiency must be > 0"):
        PipelineTask(3, 5, 0.0)
    assert ModelDims("unit", 1, 1, 1) == UNIT
