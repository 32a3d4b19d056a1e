"""The ``pipeline:`` scenario form: defaults, validation with field-named errors, and a
run of it (plan, analytic latency, simulation)."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.config import ConfigError, read_yaml
from edgespec.config.scenario_files import bundled_scenarios_dir
from edgespec.hardware.drafting_plan import build_costs
from edgespec.sim.drafting_server.build import draw_observation, run_pipeline
from edgespec.sim.drafting_server.report import report_lines, run_record
from edgespec.sim.drafting_server.scenario import PipelineScenario, pipeline_scenario_from_dict

SMALL = [
    "pipeline.num_users=6",
    "pipeline.max_output_tokens=200",
    "pipeline.planner.max_spec_len=3",
]


def _scenario(*overrides: str) -> PipelineScenario:
    fixed = any(o.startswith("pipeline.planner.spec_len=") for o in overrides)
    small = [o for o in SMALL if not (fixed and "max_spec_len" in o)]  # unused beside spec_len
    return pipeline_scenario_from_dict({"name": "t", "pipeline": {}}, [*small, *overrides])


def test_the_bundled_scenario_loads() -> None:
    data = read_yaml(bundled_scenarios_dir() / "zhu-pipeline.yaml")
    scenario = pipeline_scenario_from_dict(data)
    assert scenario.name == "zhu-pipeline" and scenario.pipeline.num_users == 20
    assert scenario.pipeline.simulation.step_barrier
    assert scenario.pipeline.verifier.policy is None


def test_the_defaults_are_table_two() -> None:
    cfg = pipeline_scenario_from_dict({"pipeline": {}}).pipeline
    assert (cfg.num_users, cfg.max_input_tokens, cfg.max_output_tokens) == (100, 512, 2048)
    assert cfg.cell.bandwidth_hz == 20e6 and cfg.cell.tx_power_w == 0.2
    costs = build_costs(cfg)
    assert costs.draft.name == "tinyllama-1.1b" and costs.verify.name == "llama2-7b"
    assert costs.draft_stage.c1_s_per_flop == 4.11e-13 and costs.acceptance == 0.8


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        (["pipeline.num_user=3"], "pipeline.num_user", "did you mean 'num_users'"),
        (["pipeline.alpha=1.5"], "pipeline.alpha", "must be in [0, 1]"),
        (["pipeline.num_users=0"], "pipeline.num_users", "must be >= 1"),
        (["pipeline.planner.spec_len=0"], "pipeline.planner.spec_len", "must be >= 1"),
        (["pipeline.planner.batching=greedy"], "pipeline.planner.batching", "must be one of"),
        (["pipeline.simulation.acceptance=oracle"], "pipeline.simulation.acceptance", "one of"),
        (
            ["pipeline.simulation.acceptance=trace", "pipeline.simulation.traces=[]"],
            "pipeline.simulation.traces",
            "needs a trace set",
        ),
        (
            [
                "pipeline.stop_predictor.confusion_tpr=0.9",
                "pipeline.stop_predictor.confusion_fpr=0.1",
            ],
            "pipeline.stop_predictor",
            "needs sampled acceptance",
        ),
        (
            ["pipeline.simulation.acceptance=iid", "pipeline.stop_predictor.policy.name=mlp"],
            "pipeline.stop_predictor",
            "give confusion_tpr and confusion_fpr",
        ),
        (["pipeline.verifier.max_batch_size=0"], "pipeline.verifier.max_batch_size", ">= 1"),
        (["pipeline.verifier.slo_tokens_per_s=-2"], "pipeline.verifier.slo_tokens_per_s", "> 0"),
        (  # every deadline was infinite (the scenario's slo_classes rule, one copy)
            ["pipeline.verifier.slo_tokens_per_s=1e-306"],
            "pipeline.verifier.slo_tokens_per_s",
            "must be at least 1e-06 tok/s (a slower target's deadlines are not finite) or null",
        ),
        (["pipeline.cell.radius_m=5"], "pipeline.cell", "radius_m must be > min_distance_m"),
        (["seed=-1"], "seed", "must be >= 0"),
        (["duration_s=3"], "duration_s", "unknown field"),
    ],
)
def test_a_bad_value_names_its_field(overrides: list[str], field: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        _scenario(*overrides)
    assert info.value.path == field
    assert message in info.value.message


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        (["pipeline.draft_profile=rtx3080-nothing"], "pipeline.draft_profile", "rtx3080-nothing"),
        (["pipeline.verify_profile=a100-qwen3-32b"], "pipeline.verify_profile", "not a 'zhu'"),
        (["pipeline.sbs_memory_gb=1"], "pipeline.sbs_memory_gb", "draft model's weights"),
        (
            ["pipeline.sbs_memory_gb=2.3", "pipeline.max_input_tokens=4000"],
            "pipeline.sbs_memory_gb",
            "does not fit the SBS memory",
        ),
        (
            ["pipeline.verifier.policy.name=fcsf"],
            "pipeline.verifier.policy.name",
            "did you mean 'fcfs'",
        ),
        (
            ["pipeline.verifier.policy.name=lab", "pipeline.verifier.policy.params.ratio=2"],
            "pipeline.verifier.policy.params",
            "no parameter(s) ['ratio']",
        ),
        (
            ["pipeline.simulation.acceptance=trace", "pipeline.simulation.traces=[nothing]"],
            "pipeline.simulation.traces",
            "no such trace file",
        ),
    ],
)
def test_a_bad_reference_fails_the_run_at_its_field(
    overrides: list[str], field: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        run_pipeline(_scenario(*overrides))
    assert info.value.path == field
    assert message in info.value.message


def test_a_run_matches_its_analytic_latency_and_reports_it() -> None:
    run = run_pipeline(_scenario())
    assert run.result.makespan_s == pytest.approx(run.analytic_total_s, rel=1e-9)
    assert run.plan_order is None
    lines = report_lines(run)
    assert lines[0].startswith("t: 6 users, tinyllama-1.1b drafting on the SBS")
    assert f"l = {run.plan.spec_len}" in lines[1]
    assert "T_inf analytic" in lines[2] and "simulated" in lines[2]
    assert "SBS busy" in lines[3] and "MBS busy" in lines[3]
    assert lines[4].startswith("MBS schedule: the plan's order")
    record: dict[str, Any] = run_record(run)
    assert record["plan"]["batch_sizes"] == [len(b) for b in run.plan.batches]
    assert record["simulated"]["makespan_s"] == run.result.makespan_s


def test_the_draws_follow_the_seed() -> None:
    cfg = _scenario().pipeline
    assert draw_observation(cfg, 1) == draw_observation(cfg, 1)
    assert draw_observation(cfg, 1) != draw_observation(cfg, 2)
    tasks = draw_observation(cfg, 1).tasks
    assert all(1 <= t.input_len <= 512 and 1 <= t.output_len <= 200 for t in tasks)


def test_a_verifier_policy_is_compared_with_the_plan_order() -> None:
    run = run_pipeline(
        _scenario(
            "pipeline.verifier.policy.name=wisp",
            "pipeline.verifier.slo_tokens_per_s=30",
            "pipeline.simulation.acceptance=iid",
        )
    )
    assert run.plan_order is not None
    line = report_lines(run)[4]
    assert line.startswith("MBS schedule: batching policy 'wisp' over per-session blocks")
    assert "in plan order" in line and "past their deadline" in line


def test_trace_acceptance_with_the_stop_predictor_runs() -> None:
    run = run_pipeline(
        _scenario(
            "pipeline.simulation.acceptance=trace",
            "pipeline.planner.spec_len=3",
            "pipeline.stop_predictor.policy.name=mlp",
            "pipeline.stop_predictor.overhead_ms=0.5",
        )
    )
    assert run.result.makespan_s > run.result.upload_s


def test_a_scenario_run_is_deterministic_under_its_seed() -> None:
    iid = ["pipeline.simulation.acceptance=iid", "pipeline.simulation.step_barrier=false"]
    first, again = run_pipeline(_scenario(*iid)), run_pipeline(_scenario(*iid))
    assert first.result == again.result and first.plan == again.plan
    other = run_pipeline(_scenario(*iid, "seed=1"))
    assert other.result.makespan_s != first.result.makespan_s


def test_a_wisp_scheduled_verifier_behind_a_stopping_drafting_server_runs() -> None:
    # Issue item 7: the edge drafting server cuts blocks with the stop predictor, the MBS
    # runs WISP's scheduler over the per-session blocks.
    run = run_pipeline(
        _scenario(
            "pipeline.simulation.acceptance=trace",
            "pipeline.simulation.step_barrier=false",
            "pipeline.planner.spec_len=3",
            "pipeline.stop_predictor.policy.name=mlp",
            "pipeline.verifier.policy.name=wisp",
            "pipeline.verifier.slo_tokens_per_s=30",
        )
    )
    assert run.plan_order is not None
    assert all(t > 0 for t in run.result.task_tokens)
    assert run.result.makespan_s > run.result.upload_s
    assert report_lines(run)[4].startswith("MBS schedule: batching policy 'wisp'")


def test_the_users_are_bounded_before_any_planning() -> None:
    """Planning grows with the square of the users: 10**9 would never finish."""
    with pytest.raises(ConfigError) as info:
        pipeline_scenario_from_dict({"pipeline": {"num_users": 10_001}})
    assert str(info.value) == (
        "config field 'pipeline.num_users': must be <= 10,000 (planning grows with the square "
        "of the users), got 10001"
    )


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [  # were refused by the planner at 'pipeline.planner.params.output_len', a field not given
        (
            {"max_output_tokens": 32_769},
            "config field 'pipeline.max_output_tokens': must be <= 32,768 (the planner's tables "
            "grow with it), got 32769",
        ),
        (
            {"planner": {"output_len": 40_000}},
            "config field 'pipeline.planner.output_len': must be <= 32,768, got 40000",
        ),
    ],
)
def test_the_planned_output_length_is_bounded_at_its_own_field(
    pipeline: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        pipeline_scenario_from_dict({"pipeline": pipeline})
    assert str(info.value) == message
