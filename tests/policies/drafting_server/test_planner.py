"""Problem P (Zhu Eq. 24): the planner's choices and its named baselines."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.policies.drafting_server.batching import dp_batches
from edgespec.policies.drafting_server.latency import inference_latency_s
from edgespec.policies.drafting_server.planner import PipelinePlanner, observe_tasks
from tests.policies.drafting_server.helpers import paper_costs


def drawn(num_tasks: int, seed: int = 0) -> tuple[list[int], list[int]]:
    rng = np.random.default_rng(seed)
    return rng.integers(1, 513, num_tasks).tolist(), rng.integers(1, 2049, num_tasks).tolist()


def test_speculation_length_is_the_enumerated_minimum() -> None:
    costs = paper_costs()
    inputs, outputs = drawn(12)
    obs = observe_tasks(inputs, outputs, [6.0] * 12, 20e6)
    plan = PipelinePlanner(costs, max_spec_len=4).plan(obs)
    out = max(outputs)
    per_l = [dp_batches(costs, obs.tasks, n, output_len=out)[1] for n in range(1, 5)]
    assert plan.spec_len == 1 + int(np.argmin(per_l))
    assert plan.planned_inference_s == pytest.approx(min(per_l))
    # FSL: the length is fixed.
    assert PipelinePlanner(costs, spec_len=3).plan(obs).spec_len == 3


def test_paper_scale_reference_numbers() -> None:
    # (TinyLlama-1.1B, LLaMA-7B), α = 0.8, K = 100, every task O_max = 2048 (the DP's
    # assumption): l = 1 is best, about 154 s, and SD without pipeline about 235 s
    # (SEED-NOTES §2.4 [D]: 154 s and 236 s).
    inputs, _ = drawn(100)
    obs = observe_tasks(inputs, [2048] * 100, [6.0] * 100, 20e6)
    plan = PipelinePlanner(paper_costs()).plan(obs)
    assert plan.spec_len == 1
    assert 145 < plan.planned_inference_s < 165
    sequential = PipelinePlanner(paper_costs(), pipelined=False).plan(obs)
    assert 1.4 < sequential.planned_inference_s / plan.planned_inference_s < 1.6
    assert inference_latency_s(
        paper_costs(), obs.tasks, plan.batches, plan.spec_len
    ) == pytest.approx(plan.planned_inference_s)


def test_baselines_are_configurations() -> None:
    costs = paper_costs()
    inputs, outputs = drawn(10, seed=3)
    obs = observe_tasks(inputs, outputs, [2.0, 8.0] * 5, 20e6)
    best = PipelinePlanner(costs).plan(obs)
    for kwargs in ({"batching": "max"}, {"batching": "static"}, {"batching": "heuristic"}):
        other = PipelinePlanner(costs, **kwargs).plan(obs)  # type: ignore[arg-type]
        assert other.planned_inference_s >= best.planned_inference_s * (1 - 1e-9)
    single = PipelinePlanner(costs, batching="none").plan(obs)
    assert single.batches == tuple((k,) for k in np.argsort(inputs, kind="stable"))
    static = PipelinePlanner(costs, batching="static", static_batch_size=4).plan(obs)
    assert [len(b) for b in static.batches] == [4, 4, 2]
    uniform = PipelinePlanner(costs, bandwidth="uniform").plan(obs)
    assert uniform.shares == (0.1,) * 10 and uniform.upload_s > best.upload_s
    assert sum(best.shares) == pytest.approx(1.0)
    assert best.planned_total_s == best.planned_inference_s + best.upload_s


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="batching must be one of"):
        PipelinePlanner(paper_costs(), batching="greedy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one input length, output bound and efficiency"):
        observe_tasks([1, 2], [3], [1.0, 1.0], 1e6)
    with pytest.raises(ValueError, match="at least one task"):
        observe_tasks([], [], [], 1e6)


def test_the_planner_reports_each_speculation_length_it_plans() -> None:
    """``pipeline.num_users=2000`` planned for seconds (10,000: minutes) without a word."""
    obs = observe_tasks(*drawn(8), [6.0] * 8, 20e6)
    calls: list[tuple[int, int]] = []
    plan = PipelinePlanner(paper_costs(), max_spec_len=3).plan(obs, lambda *c: calls.append(c))
    assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]  # before the first, then after each
    assert plan == PipelinePlanner(paper_costs(), max_spec_len=3).plan(obs)  # unchanged
    calls.clear()
    PipelinePlanner(paper_costs(), spec_len=5).plan(obs, lambda *c: calls.append(c))
    assert calls == [(0, 1), (1, 1)]  # FSL: one length


def test_a_plan_past_the_sbs_memory_is_refused_whatever_its_batching() -> None:
    """Every batch within Γ_s (Eqs. 9-10) with the tasks' own lengths: Max batching planned
    for ``output_len`` 1 filled batches of 3 where the tasks' 2 output tokens hold 2, and
    None batching planned tasks that do not fit on their own (only DP refused)."""
    from tests.policies.drafting_server.helpers import fixed_costs

    obs = observe_tasks([2] * 4, [2] * 4, [1.0] * 4, 20e6)  # 4 KV bytes a token: 16 a task
    roomy = fixed_costs(1.0, 1.0, memory_bytes=12 + 40)  # 12 B of weights, 2 tasks of 16 B
    assert PipelinePlanner(roomy, batching="max").plan(obs).batches == ((0, 1), (2, 3))
    with pytest.raises(ValueError) as info:
        PipelinePlanner(roomy, batching="max", output_len=1).plan(obs)
    assert str(info.value) == (
        "max batching: batch 1 of 2 (3 tasks, padded to I=2, O=2) needs 6e-08 GB, over the "
        "SBS memory of 5.2e-08 GB (Eqs. 9-10)"
    )
    tight = fixed_costs(1.0, 1.0, memory_bytes=12 + 10)  # not one task
    with pytest.raises(ValueError, match=r"^none batching: batch 1 of 4 \(1 tasks"):
        PipelinePlanner(tight, batching="none").plan(obs)
