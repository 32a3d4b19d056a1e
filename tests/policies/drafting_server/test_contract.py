"""The drafting planner's contract (:mod:`edgespec.policies.drafting_contract`): the one
check both hosts apply to a plan, each violation named exactly."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.drafting_contract import check_plan
from edgespec.policies.drafting_server.planner import PipelinePlan

GOOD = PipelinePlan(((0, 2), (1,)), 3, (0.5, 0.25, 0.25), 1.0, 0.1)


def test_a_plan_in_contract_passes_with_an_int_spec_len() -> None:
    assert check_plan(GOOD, 3, "Zhu") is GOOD
    numpy_made = replace(GOOD, batches=((np.int64(0), 2), (1,)), spec_len=np.int64(3))  # type: ignore[arg-type]
    checked = check_plan(numpy_made, 3)
    assert type(checked.spec_len) is int and checked.spec_len == 3


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            {"batches": ((0, 2),)},
            "batches must hold each of the 3 tasks once: task 1 is in no batch",
        ),
        (
            {"batches": ((0, 2), (1, 2))},
            "batches must hold each of the 3 tasks once: task 2 is in two batches",
        ),
        (
            {"batches": ((0, 1, 2), ())},
            "batches must hold each of the 3 tasks once: batch 1 is empty",
        ),
        (
            {"batches": ((0, 3), (1, 2))},
            "batches must hold each of the 3 tasks once: batch 0 holds 3, not a task index in 0..2",
        ),
        (
            {"batches": ((0, True), (1, 2))},
            "batches must hold each of the 3 tasks once: batch 0 holds True, not a task index "
            "in 0..2",
        ),
        ({"spec_len": 0}, "spec_len is 0, not an integer in 1..256"),
        ({"spec_len": 257}, "spec_len is 257, not an integer in 1..256"),
        ({"spec_len": 2.0}, "spec_len is 2.0, not an integer in 1..256"),
        ({"shares": (0.5, 0.5)}, "shares must be one per task: got 2 for 3 tasks"),
        ({"shares": (1.5, -0.5, 0.0)}, "task 1's share is -0.5, not a finite number >= 0"),
        ({"shares": (float("nan"), 0.5, 0.5)}, "task 0's share is nan, not a finite number >= 0"),
        ({"shares": (0.5, 0.25, 0.2)}, "shares sum to 0.95, not 1"),
    ],
)
def test_each_breach_is_named(change: dict[str, object], problem: str) -> None:
    with pytest.raises(PolicyContractError) as caught:
        check_plan(replace(GOOD, **change), 3, "Zhu")  # type: ignore[arg-type]
    assert str(caught.value) == f"drafting planner Zhu's plan: {problem}"


def test_an_answer_that_is_not_a_plan_is_named() -> None:
    with pytest.raises(PolicyContractError) as caught:
        check_plan({"batches": ((0,),)}, 1)
    assert str(caught.value) == "drafting plan: it is a dict, not a PipelinePlan"
