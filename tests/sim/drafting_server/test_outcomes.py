"""Sampled acceptance in the simulation: ``iid`` (per-task streams), ``trace`` replay and a
stop predictor on the SBS cutting blocks short."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.config import PolicySpec
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.latency import Batches
from edgespec.policies.drafting_server.planner import PipelineObservation
from edgespec.sim.drafting_server.engine import SimOptions, simulate_pipeline
from edgespec.sim.drafting_server.outcomes import (
    iid_outcomes,
    load_trace_pool,
    trace_outcomes,
)
from edgespec.sim.drafting_server.result import PipelineSimResult
from edgespec.sim.drafting_server.stages import StageClock
from edgespec.sim.model.stop_model import StopModel, StopPredictorConfig
from tests.sim.drafting_server.helpers import observation, paper_costs, plan_of

INPUTS, OUTPUTS = [40, 300, 7, 90, 12], [120, 9, 400, 33, 77]
BATCHES: Batches = ((0, 2), (1,), (3, 4))


def _iid(
    costs: PipelineCosts,
    obs: PipelineObservation,
    spec_len: int,
    seed: int,
    stop: StopModel | None = None,
    **options: bool,
) -> PipelineSimResult:
    plan = plan_of(costs, obs, BATCHES, spec_len)
    outcomes = iid_outcomes(obs.tasks, spec_len, costs.acceptance, seed, stop)
    return simulate_pipeline(costs, obs, plan, outcomes=outcomes, options=SimOptions(**options))


@pytest.mark.parametrize("spec_len", [1, 3])
def test_iid_at_alpha_one_commits_l_plus_one_per_step(spec_len: int) -> None:
    costs, obs = paper_costs(acceptance=1.0), observation(INPUTS, OUTPUTS)
    result = _iid(costs, obs, spec_len, seed=0)
    for k, task in enumerate(obs.tasks):
        steps = -(-task.output_len // (spec_len + 1))
        assert result.task_tokens[k] == steps * (spec_len + 1)
    # α = 1 makes Eq. 7's L = l + 1: the expected mode, step for step.
    expected = simulate_pipeline(costs, obs, plan_of(costs, obs, BATCHES, spec_len))
    assert result.makespan_s == expected.makespan_s
    assert result.batch_steps == expected.batch_steps
    assert result.task_finish_s == expected.task_finish_s


def test_iid_is_deterministic_under_a_seed() -> None:
    costs, obs = paper_costs(), observation(INPUTS, OUTPUTS)
    first, again = _iid(costs, obs, 3, seed=5), _iid(costs, obs, 3, seed=5)
    assert first == again
    other = _iid(costs, obs, 3, seed=6)
    assert other.task_tokens != first.task_tokens
    free = _iid(costs, obs, 3, seed=5, step_barrier=False)  # same draws per task, any order
    assert free.task_tokens == first.task_tokens


def test_iid_keeps_a_batch_at_full_size_until_its_last_task_is_done() -> None:
    costs, obs = paper_costs(acceptance=0.5), observation(INPUTS, OUTPUTS)
    result = _iid(costs, obs, 2, seed=1)
    for m, batch in enumerate(BATCHES):
        assert result.batch_finish_s[m] == max(result.task_finish_s[k] for k in batch)
    assert all(t >= o for t, o in zip(result.task_tokens, OUTPUTS, strict=True))
    sizes = [len(b) for b in BATCHES]
    assert result.num_blocks == sum(s * n for s, n in zip(sizes, result.batch_steps, strict=True))


def _trace_file(tmp_path: Path, seqs: list[list[int]]) -> str:
    path = tmp_path / "acc.jsonl"
    lines = [
        {
            "request_id": f"r{i}",
            "arrival_ms": 0,
            "prompt_tokens": 5,
            "output_tokens": len(s),
            "acceptance_seq": s,
        }
        for i, s in enumerate(seqs)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def test_trace_replays_each_tasks_sequence(tmp_path: Path) -> None:
    # Task k replays sequence k mod 2: all accepted (l + 1 = 3 tokens a step) or every
    # other token rejected, [1, 0] repeated (1 + 1 or 0 + 1 tokens a step).
    costs, obs = paper_costs(), observation([10, 20, 30], [30, 30, 30])
    pool = load_trace_pool([_trace_file(tmp_path, [[1] * 8, [1, 0] * 4])])
    plan = plan_of(costs, obs, ((0, 1, 2),), 2)
    outcomes = trace_outcomes(obs.tasks, 2, pool, seed=0)
    result = simulate_pipeline(costs, obs, plan, outcomes=outcomes)
    assert result.task_tokens[0] == 30 and result.task_tokens[2] == 30  # 10 steps of 3
    # [1, 0]: from an even position 1 accepted then a rejection (2 tokens), landing on the
    # next even position: 15 steps.
    assert result.task_tokens[1] == 30
    assert result.batch_steps == (15,)
    assert result.task_finish_s[0] == result.task_finish_s[2] < result.task_finish_s[1]


def test_trace_mode_runs_on_a_bundled_trace_set() -> None:
    costs, obs = paper_costs(), observation(INPUTS, OUTPUTS)
    pool = load_trace_pool(["gsm8k"])
    plan = plan_of(costs, obs, BATCHES, 3)
    result = simulate_pipeline(
        costs, obs, plan, outcomes=trace_outcomes(obs.tasks, 3, pool, seed=0)
    )
    assert result.makespan_s > result.upload_s > 0
    assert all(t >= o for t, o in zip(result.task_tokens, OUTPUTS, strict=True))
    assert len(pool.features) == len(pool.acceptance.pool) == 6  # gsm8k has draft features


def test_a_trace_set_without_sequences_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "none.jsonl"
    path.write_text('{"arrival_ms": 0, "prompt_tokens": 3, "output_tokens": 4}\n')
    with pytest.raises(ValueError, match="hold no acceptance_seq"):
        load_trace_pool([str(path)])


def _stop(tpr: float, fpr: float, overhead_ms: float = 0.0) -> StopModel:
    return StopModel(StopPredictorConfig(None, tpr, fpr, overhead_ms), None, ())


def test_a_stop_predictor_that_never_stops_changes_nothing_at_alpha_one() -> None:
    costs, obs = paper_costs(acceptance=1.0), observation(INPUTS, OUTPUTS)
    plain = _iid(costs, obs, 3, seed=2)
    assert _iid(costs, obs, 3, seed=2, stop=_stop(1.0, 0.0)) == plain
    slower = _iid(costs, obs, 3, seed=2, stop=_stop(1.0, 0.0, overhead_ms=1.0))
    assert slower.sbs_busy_s == pytest.approx(plain.sbs_busy_s + sum(plain.batch_steps) * 3e-3)


def test_a_stop_predictor_that_always_stops_sends_nothing() -> None:
    # K_θ = 0: one draft pass (the stopped token), no draft token verified, the target's
    # own token committed: O_k steps per task, each with a one-pass draft.
    costs, obs = paper_costs(acceptance=1.0), observation(INPUTS, OUTPUTS)
    result = _iid(costs, obs, 3, seed=2, stop=_stop(0.0, 0.0))
    assert result.task_tokens == tuple(float(o) for o in OUTPUTS)
    assert result.batch_steps == tuple(max(OUTPUTS[k] for k in b) for b in BATCHES)
    clock = StageClock(costs, 3)
    drafts = 0.0
    for batch, steps in zip(BATCHES, result.batch_steps, strict=True):
        padded = max(INPUTS[k] for k in batch)
        drafts += sum(clock.draft_s(padded, n, len(batch), 1) for n in range(1, steps + 1))
    assert result.sbs_busy_s == pytest.approx(drafts, rel=1e-12)


def test_the_bundled_stop_predictor_replays_on_trace_features() -> None:
    from edgespec.policies.registry import build_policy

    costs, obs = paper_costs(), observation(INPUTS, OUTPUTS)
    pool = load_trace_pool(["gsm8k"])
    policy = build_policy("stop", "mlp", {})
    config = StopPredictorConfig(PolicySpec("mlp"))
    stop = StopModel(config, policy, pool.features)
    plan = plan_of(costs, obs, BATCHES, 4)
    outcomes = trace_outcomes(obs.tasks, 4, pool, seed=0, stop=stop)
    result = simulate_pipeline(costs, obs, plan, outcomes=outcomes)
    plain = simulate_pipeline(costs, obs, plan, outcomes=trace_outcomes(obs.tasks, 4, pool, seed=0))
    assert all(t >= o for t, o in zip(result.task_tokens, OUTPUTS, strict=True))
    assert result.makespan_s != plain.makespan_s  # blocks were cut short somewhere
