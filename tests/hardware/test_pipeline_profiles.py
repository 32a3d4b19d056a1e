"""A ``pipeline:`` scenario's profiles: a zhu fit over the architecture's FLOPs is refused
with the printed fit ``edgespec profile`` writes beside it named, and a profile of the
other role is refused at its field, naming both roles (the bundled paper profiles say no
role and stay accepted), in ``edgespec sim`` as in every host of :func:`build_costs`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.hardware.drafting_plan import PipelineSystem, build_costs
from edgespec.hardware.drafting_server import pipeline_costs


def _profile(path: Path, role: str, model: str, flops: str = "printed") -> str:
    data = {
        "kind": "zhu", "role": role, "model": model, "flops": flops,
        "c1_s_per_flop": 2e-12, "c2_s": 0.01,
    }  # fmt: skip
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _error(draft: str, verify: str) -> str:
    with pytest.raises(ConfigError) as info:
        build_costs(PipelineSystem(draft_profile=draft, verify_profile=verify))
    return str(info.value)


def test_an_architecture_fit_is_refused_naming_the_printed_fit_beside_it(
    tmp_path: Path,
) -> None:
    draft = _profile(tmp_path / "g-draft-zhu.yaml", "draft", "gemma3-270m-draft", "architecture")
    verify = _profile(tmp_path / "g-zhu-printed.yaml", "target", "gemma3-270m")
    assert _error(draft, verify) == (
        f"config field 'pipeline.draft_profile': '{draft}' is fitted against the "
        "architecture's FLOPs (flops: architecture); the pipeline model prices Zhu's printed "
        f"FLOPs: give '{tmp_path}/g-draft-zhu-printed.yaml', the printed fit edgespec "
        "profile writes beside it"
    )


def test_a_profile_of_the_other_role_is_refused_at_its_field(tmp_path: Path) -> None:
    target = _profile(tmp_path / "g-zhu-printed.yaml", "target", "gemma3-270m")
    draft = _profile(tmp_path / "g-draft-zhu-printed.yaml", "draft", "gemma3-270m-draft")
    assert _error(target, target) == (
        f"config field 'pipeline.draft_profile': '{target}' is the target's profile (role: "
        "target); the pipeline's draft stage needs the drafter's (role: draft, "
        "NAME-draft-zhu-printed.yaml)"
    )
    assert _error(draft, draft) == (
        f"config field 'pipeline.verify_profile': '{draft}' is the drafter's profile (role: "
        "draft); the pipeline's verify stage needs the target's (role: target, "
        "NAME-zhu-printed.yaml)"
    )
    costs = build_costs(PipelineSystem(draft_profile=draft, verify_profile=target))
    assert (costs.draft.name, costs.verify.name) == ("gemma3-270m-draft", "gemma3-270m")
    with pytest.raises(ConfigError, match=r"^config field 'profile': '.*' is the target's profile"):
        pipeline_costs(target, target, 16.0, 0.8)  # the reproduction's hosts check it too


def test_the_bundled_paper_profiles_say_no_role_and_are_accepted() -> None:
    costs = build_costs(PipelineSystem())
    assert (costs.draft.name, costs.verify.name) == ("tinyllama-1.1b", "llama2-7b")


def test_sim_refuses_a_role_swapped_scenario_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _profile(tmp_path / "g-zhu-printed.yaml", "target", "gemma3-270m")
    draft = _profile(tmp_path / "g-draft-zhu-printed.yaml", "draft", "gemma3-270m-draft")
    scenario = tmp_path / "swapped.yaml"
    pipeline = {"draft_profile": target, "verify_profile": draft, "num_users": 2}
    scenario.write_text(yaml.safe_dump({"system": "drafting_server", "pipeline": pipeline}))
    assert main(["sim", str(scenario), "--quiet", "--out", str(tmp_path / "run")]) == 2
    out, err = capsys.readouterr()
    assert (out, err.count("\n")) == ("", 1)
    assert err.endswith(
        f"config field 'pipeline.draft_profile': '{target}' is the target's profile (role: "
        "target); the pipeline's draft stage needs the drafter's (role: draft, "
        "NAME-draft-zhu-printed.yaml)\n"
    )
