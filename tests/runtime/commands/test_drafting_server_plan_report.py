"""``drafting-server --plan``'s report (:mod:`edgespec.runtime.commands.drafting_server_plan`):
the plan's line before the warm-up, each run against its plan (T_inf, steps, the α its
acceptance implies) in its stats line and ``--json``, the plan's batch sizes; and its
early refusals: an l over the server's ``max_draft_tokens`` at the scenario's line before
the draft loads, a prompt the SBS memory cannot hold named as the rest of the command
names prompts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import edgespec.runtime.edge.drafting_server as edge
from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.hardware.drafting_plan import build_costs, load_planning
from edgespec.policies.drafting_server.planner import PipelinePlan
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.commands.drafting_server_plan import (
    implied_alpha,
    load_plan_flag,
    plan_line,
    plan_run,
)
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.conftest import start_server
from tests.runtime.stage_lines import without_stages

SCENARIO = """\
system: drafting_server
pipeline:
  alpha: 0.8
  planner: {batching: static, static_batch_size: 2, max_spec_len: 3, pipelined: false}
"""
"""Plans the three sessions below as batches (0, 1), (2) with l = 2, not pipelined."""


def _argv(port: int, draft: Path | str, plan: Path) -> list[str]:
    argv = ["drafting-server", "--server", f"127.0.0.1:{port}", "--draft", str(draft)]
    argv += ["--prompt-ids", "1,2,3", "--prompt-ids", "4,5", "--prompt-ids", "9"]
    return [*argv, "--max-new-tokens", "6", "--plan", str(plan)]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


def test_the_plan_comes_first_and_each_run_is_set_against_it(
    server: ServerThread, model_dir: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    path, out = _write(tmp_path, SCENARIO), tmp_path / "ds.json"
    before_warmup: list[str] = []
    real = edge.run_drafting_server

    def recorded(*args: Any, **kwargs: Any) -> Any:
        if not before_warmup:
            before_warmup.append(without_stages(capsys.readouterr().err))
        return real(*args, **kwargs)

    monkeypatch.setattr(edge, "run_drafting_server", recorded)
    assert main([*_argv(server.port, model_dir, path), "--json", str(out)]) == 0
    assert before_warmup == [
        f"[plan: planner zhu ({path}), 2 batches of sizes [2, 1], spec_len 2, not pipelined, "
        "alpha 0.8, planned T_inf 0.1059 s]\n"
    ]
    (line,) = without_stages(capsys.readouterr().err).splitlines()
    run = json.loads(out.read_text())["runs"]["not_pipelined"]
    planned = run["plan"]
    assert planned["planned_steps"] == 3  # ⌈6 / L⌉, L = (1 − 0.8³) / 0.2 = 2.44 (Eq. 8)
    assert planned["alpha"] == 0.8
    assert planned["wall_over_planned"] == pytest.approx(run["wall_s"] / 0.10587, rel=1e-3)
    implied = implied_alpha(
        build_costs(load_planning(path)), run["accepted_per_round"], 2
    )  # fmt: skip
    assert implied is not None and planned["implied_alpha"] == implied
    assert line.startswith("[not pipelined: 3 sessions in batches of [2, 1], 18 tokens, ")
    assert line.endswith(
        f"; planned T_inf 0.1059 s vs measured {run['wall_s']:.2f} s "
        f"({planned['wall_over_planned']:.2f}×), 3 planned steps vs {run['num_steps']}; "
        f"alpha {implied:.2f} implied by {run['accepted_per_round']:.2f} accepted per round "
        "at spec_len 2 vs the scenario's 0.8]"
    )


def test_the_alpha_a_run_implies_inverts_eq_7(tmp_path: Path) -> None:
    costs = build_costs(load_planning(_write(tmp_path, SCENARIO)))
    accepted = (1 - 0.53**4) / (1 - 0.53) - 1  # at α 0.53, l = 3 (Eq. 7): 1.13 a round
    assert implied_alpha(costs, accepted, 3) == pytest.approx(0.53, abs=1e-9)
    assert implied_alpha(costs, 3.0, 3) == pytest.approx(1.0)
    assert implied_alpha(costs, 0.0, 3) == pytest.approx(0.0)
    assert implied_alpha(costs, 3.5, 3) is None  # more than l accepted: no α
    assert implied_alpha(costs, -0.5, 3) is None


def test_a_plan_of_one_batch_says_batch(tmp_path: Path) -> None:
    path = _write(tmp_path, "system: drafting_server\npipeline:\n  alpha: 0.5\n")
    planning = load_plan_flag(str(path))
    assert planning is not None
    plan = PipelinePlan(((0, 1, 2),), 3, (1 / 3,) * 3, 1.25, 0.0)
    assert plan_line(planning, plan) == (
        f"[plan: planner zhu ({path}), 1 batch of size [3], spec_len 3, pipelined, alpha 0.5, "
        "planned T_inf 1.25 s]"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "system: drafting_server\npipeline:\n  max_output_tokens: 6\n"
            "  planner: {spec_len: 3}\n",
            "{path}:4: config field 'pipeline.planner.spec_len': 3 exceeds the server's "
            "max_draft_tokens 2: set it <= 2",
        ),
        (
            "system: drafting_server\npipeline:\n  planner:\n    max_spec_len: 3\n",
            "{path}:4: config field 'pipeline.planner.max_spec_len': 3 exceeds the server's "
            "max_draft_tokens 2 (spec_len is null: the planner may pick any l of 1..3): "
            "set it <= 2",
        ),
    ],
)
def test_an_l_over_the_servers_limit_is_refused_at_its_line_before_the_draft_loads(
    text: str, message: str, target: TransformersTarget, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    path = _write(tmp_path, text)
    running = start_server(target, max_draft_tokens=2)
    try:
        assert main(_argv(running.port, "nowhere", path)) == 2  # no draft "nowhere" loads
    finally:
        running.stop(grace_s=0)
    assert (
        without_stages(capsys.readouterr().err)
        == f"edgespec drafting-server: {message.format(path=path)}\n"
    )


def test_a_prompt_the_sbs_memory_cannot_hold_is_named_as_prompt_k_of_n(tmp_path: Path) -> None:
    costs = build_costs(load_planning(_write(tmp_path, SCENARIO)))
    memory_bytes = costs.draft.param_bytes + costs.draft.kv_bytes_per_token() * 50.5
    path = _write(
        tmp_path, f"system: drafting_server\npipeline:\n  sbs_memory_gb: {memory_bytes / 1e9!r}\n"
    )
    planning = load_plan_flag(str(path))
    assert planning is not None
    prompts = [(1, 2, 3), (4, 5), tuple(range(60)), (7,) * 7]
    with pytest.raises(ConfigError) as caught:
        plan_run(planning, prompts, [6] * 4, None)
    assert str(caught.value) == (
        f"{path}:3: config field 'pipeline.sbs_memory_gb': prompt 3 of 4 (60 prompt tokens "
        f"+ 6 new) does not fit the SBS memory of {memory_bytes:.3g} B on its own (Eqs. 9-10)"
    )


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (  # no system: a fleet scenario
            "pipeline:\n  alpha: 0.8\n",
            "{path}",
            "a 'pipeline:' section configures the drafting-server simulator (Zhu et al.): "
            "add 'system: drafting_server'",
        ),
        (
            "system: fleet\npipeline:\n  alpha: 0.8\n",
            "{path}:1",
            "is fleet, but the 'pipeline:' section configures the drafting-server simulator "
            "(Zhu et al.): set 'system: drafting_server', or drop the section for a fleet "
            "scenario",
        ),
    ],
)
def test_a_pipeline_outside_a_drafting_server_scenario_is_refused_as_sim_refuses_it(
    text: str, where: str, message: str, tmp_path: Path
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_planning(path)
    assert str(caught.value) == f"{where.format(path=path)}: config field 'system': {message}"


def test_an_unknown_system_is_refused_at_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "system: drafting_servr\npipeline:\n  alpha: 0.8\n")
    with pytest.raises(ConfigError) as caught:
        load_planning(path)
    assert str(caught.value) == (
        f"{path}:1: config field 'system': unknown system 'drafting_servr'; known: "
        "['fleet', 'drafting_server'] (did you mean 'drafting_server'?)"
    )
