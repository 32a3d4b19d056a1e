"""``--plan``'s planning (:mod:`edgespec.runtime.commands.drafting_server_plan`): the real
sessions' budgets are known, so each is planned for the longest of them (the paper's O_max)
unless the scenario's ``planner.output_len`` says otherwise; the simulator's
``max_output_tokens`` bounds its drawn tasks and is not the real run's O. ``--plan`` takes
a bundled scenario's name as ``edgespec sim`` does, and refuses a near miss as it does."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.config.scenario_files import bundled_scenarios_dir
from edgespec.hardware.drafting_plan import build_costs, build_plan, load_planning
from edgespec.policies.drafting_server.planner import PipelinePlanner, observe_tasks
from edgespec.runtime.commands.drafting_server_plan import load_plan_flag, plan_line, plan_run
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.stage_lines import without_stages

PROMPTS = [(1, 2, 3), (4, 5), (9,), (7, 7, 7, 7)]


def _scenario(tmp_path: Path, planner: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(f"system: drafting_server\npipeline:\n  alpha: 0.8\n  planner: {{{planner}}}\n")
    return path


def _planned_for(path: Path, budgets: list[int], output_len: int) -> object:
    system = load_planning(path)
    planner = PipelinePlanner(build_costs(system), max_spec_len=10, output_len=output_len)
    lengths = [len(p) for p in PROMPTS]
    obs = observe_tasks(lengths, budgets, [1.0] * len(PROMPTS), system.cell.bandwidth_hz)
    return build_plan(planner, obs)


def test_each_session_is_planned_for_the_longest_budget(tmp_path: Path) -> None:
    path = _scenario(tmp_path, "batching: dp")
    planning = load_plan_flag(str(path))
    assert planning is not None and planning.system.max_output_tokens == 2048
    budgets = [3, 6, 6, 2]
    plan = plan_run(planning, PROMPTS, budgets, None)
    assert plan == _planned_for(path, budgets, 6)
    assert plan != _planned_for(path, budgets, 2048)  # what max_output_tokens would plan


def test_the_scenarios_output_len_is_the_planned_one(tmp_path: Path) -> None:
    path = _scenario(tmp_path, "batching: dp, output_len: 2048")
    planning = load_plan_flag(str(path))
    assert planning is not None
    budgets = [3, 6, 6, 2]
    assert plan_run(planning, PROMPTS, budgets, None) == _planned_for(path, budgets, 2048)


def test_a_budget_past_what_the_planner_plans_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["drafting-server", "--server", "127.0.0.1:1", "--draft", "nowhere"]
    argv += ["--plan", str(_scenario(tmp_path, "batching: dp")), "--max-new-tokens", "32769"]
    assert main(argv) == 2
    assert without_stages(capsys.readouterr().err) == (
        "edgespec drafting-server: config field 'max_new_tokens': must be <= 32,768 with "
        "--plan (the planner plans every session for its budget; its tables grow with it), "
        "got 32769\n"
    )


def test_a_bundled_scenarios_name_plans_from_its_file(
    server: ServerThread, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["drafting-server", "--server", f"127.0.0.1:{server.port}", "--draft", str(model_dir)]
    argv += ["--prompt-ids", "1,2,3", "--prompt-ids", "4,5", "--max-new-tokens", "4"]
    assert main([*argv, "--plan", "zhu-pipeline"]) == 0
    file = bundled_scenarios_dir() / "zhu-pipeline.yaml"
    planning = load_plan_flag(str(file))
    assert planning is not None and planning.path == file
    plan = plan_run(planning, [(1, 2, 3), (4, 5)], [4, 4], None)
    plan_said, stats = without_stages(capsys.readouterr().err).splitlines()
    assert plan_said == plan_line(planning, plan)
    assert plan_said.startswith(f"[plan: planner zhu ({file}), ")
    assert stats.startswith("[pipelined: 2 sessions in batches of ")


def test_a_near_miss_is_refused_as_sim_refuses_it_before_the_server_or_draft(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["drafting-server", "--server", "127.0.0.1:1", "--draft", "nowhere"]
    assert main([*argv, "--plan", "zhu-pipelin"]) == 2  # no server there, no draft "nowhere"
    refused = without_stages(capsys.readouterr().err)
    assert refused == (
        "edgespec drafting-server: zhu-pipelin: no such scenario file (an override looks like "
        "key.path=value) (did you mean 'zhu-pipeline'?)\n"
    )
    assert main(["sim", "zhu-pipelin"]) == 2
    assert without_stages(capsys.readouterr().err) == refused.replace("drafting-server", "sim")
