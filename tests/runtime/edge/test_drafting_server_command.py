"""``edgespec drafting-server``, the command: bad flags and a gamma over the server's draft
limit reported before anything loads, an unreachable server in one line with a hint,
``--compare`` runs both modes and writes its JSON, dataset prompts tokenized with the
draft's tokenizer; ``--plan``: a scenario's planner plans the batches and gamma (the flags
it conflicts with, its file's errors, a planned gamma over the server's limit and a
planner out of contract refused in one line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.policies.drafting_server.planner import PipelinePlan
from edgespec.policies.registry import PLANNER
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.runtime.stage_lines import stages, without_stages

CLI = ["drafting-server", "--server", "127.0.0.1:1", "--draft", "somewhere"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--batch-size", "0"], "config field 'batch_size': must be >= 1, got 0"),
        (["--gamma", "-1"], "config field 'gamma': must be >= 1, got -1"),
        (["--num-sessions", "0"], "config field 'num_sessions': must be >= 1, got 0"),
        (["--max-new-tokens", "0"], "config field 'max_new_tokens': must be >= 1, got 0"),
        (["--compare", "--no-pipeline"], "config field 'pipeline': --compare runs both"),
    ],
)
def test_bad_flags_are_reported_before_anything_loads(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*CLI, *flags]) == 2
    assert without_stages(capsys.readouterr().err).startswith(
        f"edgespec drafting-server: {message}"
    )


def test_an_unreachable_server_is_one_line_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(CLI) == 1
    err = without_stages(capsys.readouterr().err)
    assert err.startswith("edgespec drafting-server: ") and "is an `edgespec serve` running" in err


def test_compare_runs_both_modes_and_writes_the_json(
    server: ServerThread, target: TransformersTarget, draft_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    out = tmp_path / "out" / "ds.json"
    argv = ["drafting-server", "--server", f"127.0.0.1:{server.port}", "--draft", str(draft_dir)]
    argv += ["--prompt-ids", "1,2,3", "--prompt-ids", "4,5", "--prompt-ids", "9"]
    argv += ["--batch-size", "2", "--gamma", "3", "--max-new-tokens", "6", "--compare"]
    assert main([*argv, "--json", str(out)]) == 0
    said = capsys.readouterr().err
    assert stages(said) == [  # each step as it starts: minutes otherwise silent at real size
        f"loading the draft {draft_dir} ...",
        "warming up (one batch of 2, 4 tokens, untimed) ...",
        "running not pipelined: 3 sessions, up to 6 new tokens each ...",
        "running pipelined: 3 sessions, up to 6 new tokens each ...",
    ]
    err = without_stages(said)
    assert "[not pipelined: 3 sessions in batches of 2, 18 tokens, " in err
    assert "[pipelined: 3 sessions in batches of 2, 18 tokens, " in err
    assert "x; outputs identical" in err
    report = json.loads(out.read_text())
    assert report["identical"] is True and report["speedup"] > 0
    assert set(report["runs"]) == {"not_pipelined", "pipelined"}
    assert report["settings"]["prompt_tokens"] == [3, 2, 1]
    assert report["runs"]["pipelined"]["num_output_tokens"] == 18
    assert report["runs"]["pipelined"]["server_batches"] >= 1


def test_dataset_prompts_are_tokenized_with_the_drafts_tokenizer(
    server: ServerThread, draft_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["drafting-server", "--server", f"127.0.0.1:{server.port}", "--draft", str(draft_dir)]
    argv += ["--prompts", "general", "--num-sessions", "3", "--max-new-tokens", "2"]
    assert main([*argv, "--no-pipeline"]) == 0
    err = without_stages(capsys.readouterr().err)
    assert err.startswith("[not pipelined: 3 sessions in batches of 3, 6 tokens, ")


def test_a_gamma_over_the_servers_draft_limit_is_refused_before_the_draft_loads(
    target: TransformersTarget, capsys: pytest.CaptureFixture[str]
) -> None:
    running = start_server(target, max_draft_tokens=2)
    try:
        argv = ["drafting-server", "--server", f"127.0.0.1:{running.port}", "--draft", "nowhere"]
        assert main([*argv, "--gamma", "3"]) == 2
    finally:
        running.stop(grace_s=0)
    assert without_stages(capsys.readouterr().err).startswith(
        "edgespec drafting-server: config field 'gamma': 3 exceeds the server's max_draft_tokens 2"
    )


PLAN_SCENARIO = """\
name: plan
system: drafting_server
pipeline:
  alpha: 0.8
  max_output_tokens: 6
  planner: {batching: static, static_batch_size: 2, max_spec_len: 3, pipelined: false}
  simulation: {acceptance: iid}
"""
"""A ``pipeline:`` scenario (the simulator's form, its simulation section included) whose
planner plans the three sessions below as batches (0, 1), (2) with l = 2, for SD without
pipeline."""


def plan_file(tmp_path: Path, text: str = PLAN_SCENARIO) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


def plan_argv(port: int, draft: Path | str, plan: Path) -> list[str]:
    argv = ["drafting-server", "--server", f"127.0.0.1:{port}", "--draft", str(draft)]
    argv += ["--prompt-ids", "1,2,3", "--prompt-ids", "4,5", "--prompt-ids", "9"]
    return [*argv, "--max-new-tokens", "6", "--plan", str(plan)]


@pytest.mark.parametrize(
    ("flags", "modes"),
    [
        ([], ["not pipelined"]),  # the planner's pipelined: false
        (["--pipeline"], ["pipelined"]),  # the flag over the planner's
        (["--compare"], ["not pipelined", "pipelined"]),  # both, on the plan
    ],
)
def test_plan_runs_the_scenario_planners_batches_and_gamma(
    flags: list[str], modes: list[str], server: ServerThread, draft_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    path, out = plan_file(tmp_path), tmp_path / "ds.json"
    assert main([*plan_argv(server.port, draft_dir, path), *flags, "--json", str(out)]) == 0
    lines = without_stages(capsys.readouterr().err).splitlines()
    assert lines[0].startswith(
        f"[plan: planner zhu ({path}), 2 batches of sizes [2, 1], spec_len 2, not pipelined, "
        "alpha 0.8, planned T_inf 0.1"
    )
    for line, mode in zip(lines[1:], modes, strict=False):
        assert line.startswith(f"[{mode}: 3 sessions in batches of [2, 1], 18 tokens, ")
    report = json.loads(out.read_text())
    plan = report["settings"]["plan"]
    assert plan["planned_inference_s"] == pytest.approx(0.10587, rel=1e-3)
    assert {k: v for k, v in plan.items() if k != "planned_inference_s"} == {
        "scenario": str(path),
        "planner": "zhu",
        "planned_pipelined": False,
        "alpha": 0.8,
        "batches": [[0, 1], [2]],
        "spec_len": 2,
    }
    assert (report["settings"]["batch_size"], report["settings"]["gamma"]) == (None, None)
    expected = {"not pipelined": "not_pipelined", "pipelined": "pipelined"}
    assert set(report["runs"]) == {expected[mode] for mode in modes}


@pytest.mark.parametrize("flag", ["--batch-size", "--gamma"])
def test_plan_refuses_batch_size_and_gamma(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*plan_argv(1, "nowhere", plan_file(tmp_path)), flag, "2"]) == 2
    field = flag[2:].replace("-", "_")
    assert without_stages(capsys.readouterr().err) == (
        f"edgespec drafting-server: config field '{field}': --plan's planner picks it: "
        f"drop {flag}\n"
    )


def test_plan_bounds_the_sessions_it_plans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["drafting-server", "--server", "127.0.0.1:1", "--draft", "nowhere"]
    argv += ["--plan", str(plan_file(tmp_path)), "--num-sessions", "10001"]
    assert main(argv) == 2
    assert without_stages(capsys.readouterr().err) == (
        "edgespec drafting-server: config field 'num_sessions': must be <= 10,000 with --plan "
        "(planning grows with the square of the sessions), got 10001\n"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "system: drafting_server\npipeline:\n  alpha: 0.8\n  planner:\n    spec_len: 0\n",
            "{path}:5: config field 'pipeline.planner.spec_len': must be >= 1, got 0",
        ),
        (
            "system: drafting_server\npipeline:\n  planner: {name: greedy}\n",
            "{path}:3: config field 'pipeline.planner.name': unknown planner policy 'greedy'; "
            "known: ['zhu']",
        ),
        (
            "name: no-pipeline\n",
            "{path}: no pipeline: section (a drafting-server scenario, system: "
            "drafting_server, plans from it)",
        ),
    ],
)
def test_a_scenario_error_names_the_file_and_field_before_the_server_is_asked(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = plan_file(tmp_path, text)
    assert main(plan_argv(1, "nowhere", path)) == 2  # port 1: nothing was asked
    assert (
        without_stages(capsys.readouterr().err)
        == f"edgespec drafting-server: {message.format(path=path)}\n"
    )


def test_a_planned_gamma_over_the_servers_draft_limit_is_refused(
    target: TransformersTarget, draft_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    path = plan_file(
        tmp_path,
        "system: drafting_server\npipeline:\n  max_output_tokens: 6\n  planner: {spec_len: 3}\n",
    )
    running = start_server(target, max_draft_tokens=2)
    try:
        assert main(plan_argv(running.port, draft_dir, path)) == 2
    finally:
        running.stop(grace_s=0)
    assert without_stages(capsys.readouterr().err) == (
        f"edgespec drafting-server: {path}:4: config field 'pipeline.planner.spec_len': 3 "
        "exceeds the server's max_draft_tokens 2: set it <= 2\n"
    )


class BrokenPlanner:
    """A registered planner whose plan leaves the last task out."""

    def __init__(self, **options: Any) -> None:
        self.options = options

    def plan(self, obs: Any, progress: Any = None) -> PipelinePlan:
        num_tasks = len(obs.tasks)
        shares = (1.0 / num_tasks,) * num_tasks
        return PipelinePlan((tuple(range(num_tasks - 1)),), 2, shares, 0.0, 0.0)


def test_a_planner_out_of_contract_is_one_line_exit_1(
    server: ServerThread, draft_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setitem(PLANNER, "broken", BrokenPlanner)
    path = plan_file(
        tmp_path,
        "system: drafting_server\npipeline:\n  max_output_tokens: 6\n  planner: {name: broken}\n",
    )
    assert main(plan_argv(server.port, draft_dir, path)) == 1
    assert without_stages(capsys.readouterr().err) == (
        "edgespec drafting-server: drafting planner BrokenPlanner's plan: batches must hold "
        "each of the 3 tasks once: task 2 is in no batch\n"
    )
