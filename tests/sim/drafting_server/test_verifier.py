"""Composition (issue item 7): a registered batching policy schedules the MBS over
per-session blocks; passes take Eq. 17 over the chosen blocks; an answer out of the
batching contract is refused as the server refuses it (``check_batch_plan``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.core.types import BatchPlan, PendingVerification
from edgespec.policies.contracts import PolicyContractError
from edgespec.policies.drafting_server.latency import inference_latency_s
from edgespec.policies.estimator import WispCoefficients
from edgespec.policies.interfaces import BatchingPolicy, BatchLimits
from edgespec.policies.registry import BATCHING, build_policy
from edgespec.sim.drafting_server.build import wisp_params
from edgespec.sim.drafting_server.engine import SimOptions, simulate_pipeline
from edgespec.sim.drafting_server.stages import StageClock
from edgespec.sim.drafting_server.verifier import PolicyVerifier, Verifier
from tests.sim.drafting_server.helpers import observation, paper_costs, plan_of

INPUTS, OUTPUTS = [40, 300, 7, 90, 12], [120, 9, 400, 33, 77]


def _policy(
    policy: BatchingPolicy, limits: BatchLimits | None = None
) -> Callable[[StageClock], Verifier]:
    chosen = limits or BatchLimits(1 << 20, 1 << 30, 1 << 40)
    return lambda clock: PolicyVerifier(clock, policy, chosen, 0.8, "test")


@pytest.mark.parametrize("name", ["fcfs", "lab", "wisp"])
def test_one_batch_under_any_policy_is_the_recursion(name: str) -> None:
    # One batch: its blocks arrive together and every policy takes them all in one pass.
    costs, obs = paper_costs(), observation(INPUTS, OUTPUTS)
    plan = plan_of(costs, obs, ((0, 1, 2, 3, 4),), 3)
    params = wisp_params(costs) if name == "wisp" else {}
    verifier = _policy(build_policy("batching", name, params))
    result = simulate_pipeline(costs, obs, plan, verifier=verifier)
    analytic = inference_latency_s(costs, obs.tasks, plan.batches, 3)
    assert result.makespan_s == pytest.approx(plan.upload_s + analytic, rel=1e-9)
    assert result.num_passes == result.batch_steps[0]


def test_one_block_per_pass_verifies_every_block_alone() -> None:
    costs, obs = paper_costs(), observation(INPUTS, OUTPUTS)
    plan = plan_of(costs, obs, ((0, 2), (1,), (3, 4)), 2)
    fcfs = build_policy("batching", "fcfs", {})
    single = simulate_pipeline(costs, obs, plan, verifier=_policy(fcfs, BatchLimits(1)))
    merged = simulate_pipeline(costs, obs, plan, verifier=_policy(fcfs))
    assert single.num_passes == single.num_blocks == merged.num_blocks
    assert merged.num_passes < single.num_passes
    assert single.mbs_busy_s > merged.mbs_busy_s  # c^v_2 paid once per pass


def test_policies_may_merge_batches_without_the_barrier() -> None:
    costs, obs = paper_costs(), observation(INPUTS * 4, OUTPUTS * 4)
    batches = ((0, 5, 10), (1, 6, 11, 15), (2, 7), (3, 8, 12, 16, 18), (4, 9, 13, 14, 17, 19))
    plan = plan_of(costs, obs, batches, 2)
    options = SimOptions(step_barrier=False)
    order = simulate_pipeline(costs, obs, plan, options=options)
    fcfs = simulate_pipeline(
        costs, obs, plan, options=options, verifier=_policy(build_policy("batching", "fcfs"))
    )
    assert fcfs.num_blocks == order.num_blocks and fcfs.batch_steps == order.batch_steps
    assert fcfs.num_passes < order.num_passes  # some passes held blocks of several batches


def test_wisp_coefficients_are_the_verify_cost() -> None:
    costs = paper_costs()
    clock = StageClock(costs, 3)
    coefficients = WispCoefficients(**wisp_params(costs))
    for input_len, step in ((40, 1), (40, 5)):
        new = input_len + 3 if step == 1 else 4
        cached = 0.0 if step == 1 else input_len + (step - 1) * clock.tokens_per_step - 1
        estimate = coefficients.time_s(new, (cached + new) * new, cached)  # type: ignore[arg-type]
        exact = clock.pass_s(clock.verify_flops(input_len, step, 3))
        assert estimate == pytest.approx(exact, rel=1e-12)


def test_deadlines_are_counted() -> None:
    costs, obs = paper_costs(), observation(INPUTS, OUTPUTS)
    plan = plan_of(costs, obs, ((0, 2), (1,), (3, 4)), 2)
    fcfs = _policy(build_policy("batching", "fcfs"))
    lax = simulate_pipeline(
        costs, obs, plan, verifier=fcfs, options=SimOptions(slo_tokens_per_s=1e-6)
    )
    strict = simulate_pipeline(
        costs, obs, plan, verifier=fcfs, options=SimOptions(slo_tokens_per_s=1e6)
    )
    assert lax.deadline_misses == 0
    live = sum(-(-o // costs.tokens_per_step(2)) for o in OUTPUTS)  # blocks with a deadline
    assert strict.deadline_misses == live < strict.num_blocks  # padding rows carry none


class _Empty:
    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        return BatchPlan(())


class _Stranger:
    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        return BatchPlan((10**9,))


class _TakeAll:
    def select(
        self, queue: Sequence[PendingVerification], now_s: float, limits: BatchLimits
    ) -> BatchPlan:
        return BatchPlan(tuple(e.entry_id for e in queue))


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (_Empty(), "_Empty returned an empty plan although limits.force is set"),
        (_Stranger(), "_Stranger chose entry ids [1000000000] that are not in the queue"),
    ],
)
def test_a_policy_outside_its_contract_is_named(policy: BatchingPolicy, message: str) -> None:
    costs, obs = paper_costs(), observation([10, 20], [5, 5])
    plan = plan_of(costs, obs, ((0, 1),), 1)
    with pytest.raises(PolicyContractError) as caught:
        simulate_pipeline(costs, obs, plan, verifier=_policy(policy))
    assert str(caught.value) == f"batching policy {message}"


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (BatchLimits(2, 1 << 30, 1 << 40), "chose 5 entries; max_batch_size is 2"),
        (BatchLimits(8, 1000, 1 << 40), "chose 1515 new tokens; max_batch_tokens is 1000"),
        (BatchLimits(8, 1 << 30, 1000), "chose 1515 context tokens; max_context_tokens is 1000"),
    ],
)
def test_a_plan_over_the_servers_limits_is_refused(limits: BatchLimits, message: str) -> None:
    # One batch of five blocks at step 1: each forwards I_m = 300 prompt tokens + 3 drafts.
    costs, obs = paper_costs(), observation(INPUTS, OUTPUTS)
    plan = plan_of(costs, obs, ((0, 1, 2, 3, 4),), 3)
    with pytest.raises(PolicyContractError) as caught:
        simulate_pipeline(costs, obs, plan, verifier=_policy(_TakeAll(), limits))
    assert str(caught.value) == f"batching policy _TakeAll {message}"


def test_edgespec_sim_prints_a_policy_out_of_contract_as_one_line_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(BATCHING, "take_all", _TakeAll)
    overrides = ["pipeline.num_users=5", "pipeline.max_output_tokens=50"]
    verifier = ["pipeline.verifier.policy.name=take_all", "pipeline.verifier.max_batch_size=1"]
    args = ["sim", "zhu-pipeline", *overrides, *verifier, "--quiet"]
    assert main([*args, "--out", str(tmp_path / "run")]) == 1  # its plan has batches of 2
    assert capsys.readouterr().err == (
        "edgespec sim: batching policy _TakeAll chose 2 entries; max_batch_size is 1\n"
    )
