"""The event simulation against Zhu's analytic recursion (Eqs. 20–23): with ``expected``
acceptance and the step barrier, the simulated makespan is T_com + T_inf exactly."""

from __future__ import annotations

import pytest

from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.drafting_server.latency import (
    Batches,
    batch_shape,
    inference_latency_s,
    step_latencies_s,
)
from edgespec.policies.drafting_server.planner import PipelineObservation, PipelinePlanner
from edgespec.sim.drafting_server.engine import SimOptions, simulate_pipeline
from edgespec.sim.drafting_server.uplink import upload_times_s
from tests.sim.drafting_server.helpers import (
    BANDWIDTH_HZ,
    drawn_tasks,
    observation,
    paper_costs,
    plan_of,
)

REL = 1e-9

# (inputs, outputs, batches, l): batch sizes 1–3, batches ending at different steps
# (outputs 1 to 400 tokens), single batches, and l from 1 to 6.
CASES: list[tuple[list[int], list[int], Batches, int]] = [
    ([12], [30], ((0,),), 1),
    ([40, 300, 7], [25, 25, 25], ((0, 1, 2),), 3),
    ([40, 300, 7, 90], [120, 9, 400, 33], ((0, 2), (1,), (3,)), 2),
    ([5, 6, 7, 8, 9], [1, 2, 3, 50, 200], ((4, 3), (0, 1, 2)), 5),
    ([512, 1, 256, 128, 64, 32], [64, 2048, 1, 300, 300, 90], ((1,), (0, 2), (3, 4, 5)), 6),
    ([100, 100, 100], [10, 200, 10], ((0,), (1,), (2,)), 1),
]


def _case(index: int) -> tuple[PipelineObservation, Batches, int]:
    inputs, outputs, batches, spec_len = CASES[index]
    return observation(inputs, outputs), batches, spec_len


@pytest.mark.parametrize("index", range(len(CASES)))
@pytest.mark.parametrize("pipelined", [True, False])
@pytest.mark.parametrize("uniform", [False, True])  # uploads ending together, or not
def test_expected_acceptance_with_the_barrier_is_the_recursion(
    index: int, pipelined: bool, uniform: bool
) -> None:
    costs = paper_costs()
    obs, batches, spec_len = _case(index)
    plan = plan_of(costs, obs, batches, spec_len, uniform=uniform)
    result = simulate_pipeline(costs, obs, plan, options=SimOptions(pipelined=pipelined))
    analytic = inference_latency_s(costs, obs.tasks, batches, spec_len, pipelined=pipelined)
    assert result.makespan_s == pytest.approx(plan.upload_s + analytic, rel=REL, abs=0)
    assert result.upload_s == pytest.approx(plan.upload_s, rel=REL)
    assert result.inference_start_s == result.upload_s
    steps = step_latencies_s(costs, obs.tasks, batches, spec_len, pipelined=pipelined)
    assert result.step_durations_s == pytest.approx(steps.tolist(), rel=REL)
    expected_steps = [costs.num_steps(batch_shape(obs.tasks, b)[1], spec_len) for b in batches]
    assert list(result.batch_steps) == expected_steps
    assert result.num_passes == sum(expected_steps)


@pytest.mark.parametrize("pipelined", [True, False])
def test_a_drawn_hundred_users_plan_is_the_recursion(pipelined: bool) -> None:
    costs = paper_costs()
    tasks = drawn_tasks(100)
    obs = PipelineObservation(tasks, BANDWIDTH_HZ)
    plan = PipelinePlanner(costs, pipelined=pipelined, output_len=2048, max_spec_len=3).plan(obs)
    assert len(plan.batches) > 1
    result = simulate_pipeline(costs, obs, plan, options=SimOptions(pipelined=pipelined))
    analytic = inference_latency_s(costs, tasks, plan.batches, plan.spec_len, pipelined=pipelined)
    assert result.makespan_s == pytest.approx(plan.upload_s + analytic, rel=REL, abs=0)
    assert result.inference_s == pytest.approx(analytic, rel=REL)
    assert len(set(result.batch_steps)) > 1  # the batches end at different steps


@pytest.mark.parametrize("index", range(len(CASES)))
def test_without_the_barrier_it_is_never_slower(index: int) -> None:
    costs = paper_costs()
    obs, batches, spec_len = _case(index)
    for uniform in (False, True):  # uniform shares: the users' uploads end at different times
        plan = plan_of(costs, obs, batches, spec_len, uniform=uniform)
        barrier = simulate_pipeline(costs, obs, plan)
        free = simulate_pipeline(costs, obs, plan, options=SimOptions(step_barrier=False))
        assert free.makespan_s <= barrier.makespan_s * (1 + 1e-12)
        assert free.batch_steps == barrier.batch_steps  # expected: ⌈O_m / L⌉ either way
        assert free.step_durations_s == ()


def test_the_accounting_adds_up() -> None:
    costs = paper_costs()
    obs, batches, spec_len = _case(2)
    plan = plan_of(costs, obs, batches, spec_len, uniform=True)
    result = simulate_pipeline(costs, obs, plan)
    uploads = upload_times_s(obs, plan, costs)
    assert result.upload_s == max(uploads) and min(uploads) < max(uploads)
    assert 0 < result.sbs_utilisation <= 1 and 0 < result.mbs_utilisation <= 1
    # under the barrier one of the two is always busy: drafting, or verifying what was drafted
    assert result.sbs_busy_s + result.mbs_busy_s >= result.inference_s * (1 - 1e-12)
    assert result.makespan_s == max(result.batch_finish_s)
    for k, task in enumerate(obs.tasks):  # done at its own step ⌈O_k / L⌉ (padded after)
        assert result.task_tokens[k] >= task.output_len
        assert result.task_finish_s[k] <= result.makespan_s
    sizes = [len(b) for b in batches]
    assert result.num_blocks == sum(s * n for s, n in zip(sizes, result.batch_steps, strict=True))
    record = result.to_dict()
    assert record["inference_s"] == result.inference_s and record["num_events"] > 0


def test_a_plan_that_misses_a_task_is_refused() -> None:
    # The planner's contract, checked by the one checker both hosts use.
    costs = paper_costs()
    obs = observation([10, 20], [5, 5])
    with pytest.raises(PolicyContractError) as caught:
        simulate_pipeline(costs, obs, plan_of(costs, obs, ((0,),), 1))
    assert str(caught.value) == (
        "drafting plan: batches must hold each of the 2 tasks once: task 1 is in no batch"
    )
