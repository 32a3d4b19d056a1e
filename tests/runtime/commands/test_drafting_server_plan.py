"""``--plan``'s planning (:mod:`edgespec.runtime.commands.drafting_server_plan`): the real
sessions' budgets are known, so each is planned for the longest of them (the paper's O_max)
unless the scenario's ``planner.output_len`` says otherwise; the simulator's
``max_output_tokens`` bounds its drawn tasks and is not the real run's O."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.hardware.drafting_plan import build_costs, build_plan, load_planning
from edgespec.policies.drafting_server.planner import PipelinePlanner, observe_tasks
from edgespec.runtime.commands.drafting_server_plan import load_plan_flag, plan_run

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
    assert capsys.readouterr().err == (
        "edgespec drafting-server: config field 'max_new_tokens': must be <= 32,768 with "
        "--plan (the planner plans every session for its budget; its tables grow with it), "
        "got 32769\n"
    )
