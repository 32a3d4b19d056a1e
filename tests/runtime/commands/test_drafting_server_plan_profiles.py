"""``--plan``'s profiles against the run
(:mod:`edgespec.runtime.commands.drafting_server_profiles`): a profile file measured on
another model than the draft or the server's target is said before the draft loads, one used
beyond the batch size or tokens it measured after the plan's line; a bundled profile's model
is not checked, nor a range a profile does not record."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.hardware.drafting_plan import PipelineSystem
from edgespec.policies.drafting_server.planner import PipelinePlan
from edgespec.runtime.commands.drafting_server_plan import load_plan_flag
from edgespec.runtime.commands.drafting_server_profiles import model_warnings, range_warnings
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.stage_lines import without_stages

COEFFICIENTS = "kind: zhu\nflops: printed\nc1_s_per_flop: 2.08e-14\nc2_s: 1.28e-2\n"
PLANNER = "{batching: static, static_batch_size: 2, max_spec_len: 3, pipelined: false}"
"""Plans the three sessions below as batches of 2 and 1."""


def _profile(path: Path, info: str) -> Path:
    path.write_text(COEFFICIENTS + info)
    return path


def _scenario(tmp_path: Path, draft: Path, verify: Path) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(
        f"system: drafting_server\npipeline:\n  draft_profile: {draft}\n"
        f"  verify_profile: {verify}\n  planner: {PLANNER}\n"
    )
    return path


def _run(port: int, draft: Path, plan: Path) -> int:
    argv = ["drafting-server", "--server", f"127.0.0.1:{port}", "--draft", str(draft)]
    argv += ["--prompt-ids", "1,2,3", "--prompt-ids", "4,5", "--prompt-ids", "9"]
    return main([*argv, "--max-new-tokens", "6", "--plan", str(plan)])


def test_another_models_profiles_and_ranges_past_them_are_said(
    server: ServerThread, model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = _profile(
        tmp_path / "d-draft-zhu-printed.yaml",
        "role: draft\nmodel: tinyllama-1.1b\nmeasured_max_batch_size: 1\n"
        "measured_max_context_tokens: 50\n",
    )
    verify = _profile(
        tmp_path / "v-zhu-printed.yaml",
        "role: target\nmodel: llama2-7b\nmeasured_max_batch_size: 1\n"
        "measured_max_context_tokens: 5\n",
    )
    assert _run(server.port, model_dir, _scenario(tmp_path, draft, verify)) == 0
    said = without_stages(capsys.readouterr().err).splitlines()
    prefix = "edgespec drafting-server: warning: "
    assert said[:2] == [
        f"{prefix}--plan's draft_profile {draft} was measured on tinyllama-1.1b, the draft is "
        f"{model_dir}: the plan's times are another model's",
        f"{prefix}--plan's verify_profile {verify} was measured on llama2-7b, the server serves "
        f"{model_dir}: the plan's times are another model's",
    ]
    assert said[2].startswith("[plan: planner zhu (")
    assert said[3:5] == [  # batches of up to 2; prompts of up to 3 tokens + 6 planned
        f"{prefix}profile {draft} is used for batches of up to 2 (measured up to 1): its times "
        "there are extrapolated; profile a grid that covers them",
        f"{prefix}profile {verify} is used for batches of up to 2 (measured up to 1) and "
        "contexts of up to 9 tokens (measured up to 5): its times there are extrapolated; "
        "profile a grid that covers them",
    ]
    assert said[5].startswith("[not pipelined: 3 sessions in batches of [2, 1], ")
    assert len(said) == 6
    assert _run(server.port, Path("nowhere"), _scenario(tmp_path, draft, verify)) == 2
    before_loading = without_stages(
        capsys.readouterr().err
    ).splitlines()  # no draft "nowhere" loads
    assert before_loading[0] == said[0].replace(str(model_dir), "nowhere")
    assert before_loading[1:-1] == [said[1]]
    assert before_loading[-1].startswith("edgespec drafting-server: unknown model 'nowhere'")


def test_the_same_model_is_not_said_nor_a_bundled_profiles(tmp_path: Path) -> None:
    draft = _profile(tmp_path / "d.yaml", "role: draft\nmodel: gemma3-270m-draft\n")
    verify = _profile(tmp_path / "v.yaml", "role: target\nmodel: gemma3-270m\n")
    system = PipelineSystem(draft_profile=str(draft), verify_profile=str(verify))
    assert model_warnings(system, "gemma3-270m-draft", "gemma3-270m") == []
    assert model_warnings(system, "gemma3-270m-draft", None) == []  # the server does not say
    assert model_warnings(system, "gemma3-270m", None) == [
        f"warning: --plan's draft_profile {draft} was measured on gemma3-270m-draft, the draft "
        "is gemma3-270m: the plan's times are another model's"
    ]
    assert model_warnings(PipelineSystem(), "gemma3-270m-draft", "gemma3-270m") == []


def test_a_range_is_said_only_of_what_a_profile_records(tmp_path: Path) -> None:
    draft = _profile(tmp_path / "d.yaml", "model: tinyllama-1.1b\n")  # no range
    verify = _profile(tmp_path / "v.yaml", "model: llama2-7b\nmeasured_max_batch_size: 3\n")
    planning = load_plan_flag(str(_scenario(tmp_path, draft, verify)))
    assert planning is not None
    three = PipelinePlan(((0, 1, 2),), 3, (1 / 3,) * 3, 1.25, 0.0)
    assert range_warnings(planning, three, [(1,) * 500, (2,), (3,)], [6] * 3) == []
    four = PipelinePlan(((0, 1), (2, 3)), 3, (0.25,) * 4, 1.0, 0.0)
    five = PipelinePlan(((0, 1, 2, 3, 4),), 3, (0.2,) * 5, 1.0, 0.0)
    assert range_warnings(planning, four, [(1,)] * 4, [6] * 4) == []
    assert range_warnings(planning, five, [(1,)] * 5, [6] * 5) == [
        f"warning: profile {verify} is used for batches of up to 5 (measured up to 3): its "
        "times there are extrapolated; profile a grid that covers them"
    ]
