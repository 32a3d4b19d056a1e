"""``edgespec sim`` on a ``pipeline:`` scenario says a ``draft_profile`` or
``verify_profile`` the plan uses beyond the batch size or tokens it measured (the plan's
largest batch; a task's I + O), in the line ``edgespec drafting-server --plan`` and a fleet
scenario's profiles get (:func:`edgespec.hardware.drafting_plan.plan_range_warnings`).
Was: nothing was said, the run's times silently extrapolated."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.hardware.drafting_plan import PipelineSystem, plan_range_warnings
from edgespec.policies.drafting_server.planner import PipelinePlan

COEFFICIENTS = "kind: zhu\nflops: printed\nc1_s_per_flop: 2.08e-14\nc2_s: 1.28e-2\n"
EXTRAPOLATED = "its times there are extrapolated; profile a grid that covers them"


def _profile(path: Path, role: str, model: str, batch: int, context: int) -> Path:
    path.write_text(
        f"{COEFFICIENTS}role: {role}\nmodel: {model}\nmeasured_max_batch_size: {batch}\n"
        f"measured_max_context_tokens: {context}\n"
    )
    return path


def _run(tmp_path: Path, draft: Path, verify: Path) -> int:
    """Three users of I = O = 1 (I + O = 2), planned as batches of 2 and 1."""
    planner = {"batching": "static", "static_batch_size": 2, "max_spec_len": 2}
    pipeline = {
        "draft_profile": str(draft), "verify_profile": str(verify), "num_users": 3,
        "max_input_tokens": 1, "max_output_tokens": 1, "planner": planner,
    }  # fmt: skip
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"system": "drafting_server", "pipeline": pipeline}))
    out = tmp_path / "run"
    return main(["sim", str(path), "--quiet", "--overwrite", "--out", str(out)])


def test_a_pipeline_profile_used_beyond_its_range_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = _profile(tmp_path / "d.yaml", "draft", "tinyllama-1.1b", 1, 50)
    verify = _profile(tmp_path / "v.yaml", "target", "llama2-7b", 1, 1)
    assert _run(tmp_path, draft, verify) == 0
    said = capsys.readouterr()
    assert said.err.splitlines() == [
        f"edgespec sim: warning: profile {draft} is used for batches of up to 2 (measured up "
        f"to 1): {EXTRAPOLATED}",
        f"edgespec sim: warning: profile {verify} is used for batches of up to 2 (measured up "
        f"to 1) and contexts of up to 2 tokens (measured up to 1): {EXTRAPOLATED}",
    ]
    assert said.out.startswith("pipeline: 3 users, tinyllama-1.1b drafting on the SBS")


def test_profiles_within_their_range_are_not_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = _profile(tmp_path / "d.yaml", "draft", "tinyllama-1.1b", 2, 2)
    verify = _profile(tmp_path / "v.yaml", "target", "llama2-7b", 2, 2)
    assert _run(tmp_path, draft, verify) == 0
    assert capsys.readouterr().err == ""


def test_one_computation_for_both_hosts(tmp_path: Path) -> None:
    """The largest batch of the plan and the longest I + O of the tasks, each profile once."""
    same = _profile(tmp_path / "p.yaml", "target", "llama2-7b", 3, 10)
    system = PipelineSystem(draft_profile=str(same), verify_profile=str(same))
    plan = PipelinePlan(((0, 1), (2, 3, 4, 5)), 3, (1 / 6,) * 6, 1.0, 0.0)
    lengths = [(1, 9), (8, 3), (1, 1), (1, 1), (1, 1), (1, 1)]
    assert plan_range_warnings(system, plan, lengths) == [
        f"warning: profile {same} is used for batches of up to 4 (measured up to 3) and "
        f"contexts of up to 11 tokens (measured up to 10): {EXTRAPOLATED}"
    ]
    assert plan_range_warnings(system, plan, [(1, 9)] * 6) == [
        f"warning: profile {same} is used for batches of up to 4 (measured up to 3): {EXTRAPOLATED}"
    ]
