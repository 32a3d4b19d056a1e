"""``mode: centralized`` refuses the fields it leaves unused (edgespec.sim.setup.
centralized_fields): they ran byte-identical to the scenario without them. The window
policy and the acceptance model may stay (a file describes the distributed runs its
centralized one is compared with), and the bundled scenarios and WISP's centralized
baseline still build."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.config.scenario_files import bundled_scenarios
from edgespec.reproduce.wisp.setup import WispSetup, scenario
from edgespec.sim.setup.build import check_buildable
from edgespec.sim.setup.scenario import load_scenario, scenario_from_dict
from tests.sim.helpers import tiny_scenario

MODES = "applies only to mode: distributed or fused (mode is centralized: "


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["fused_rounds=cloud_only"],
         f"'fused_rounds': {MODES}no round is fused, the target decodes every token); drop it"),
        (["fused_rounds=cloud_only", "cloud_only_draft_pass=true"],
         f"'fused_rounds': {MODES}no round is fused, the target decodes every token); drop it"),
        *(
            ([compat], f"'dsdsim_compat': {MODES}DSD-Sim's simplifications change drafted and "
             "fused rounds, and it runs neither); drop it")
            for compat in ("dsdsim_compat={}", "dsdsim_compat.fixed_rounds=true",
                           "dsdsim_compat.unqueued_fused=true",
                           "dsdsim_compat={one_pass_drafting: false, fixed_rounds: false, "
                           "unqueued_fused: false}")
        ),
    ],
)  # fmt: skip
def test_a_field_centralized_rounds_leave_unused_is_refused(
    overrides: list[str], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(tiny_scenario(), ["mode=centralized", *overrides])
    assert str(info.value) == f"config field {message}"
    for mode in ("distributed", "fused"):  # where they act
        assert scenario_from_dict(tiny_scenario(), [f"mode={mode}", *overrides]).mode == mode


def test_a_refused_field_is_named_at_its_line_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    data = {**tiny_scenario(duration_s=2.0), "mode": "centralized", "fused_rounds": "cloud_only"}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    line = path.read_text().splitlines().index("fused_rounds: cloud_only") + 1
    out = tmp_path / "run"
    assert main(["sim", str(path), "--quiet", "--no-plots", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: {path}:{line}: config field 'fused_rounds': {MODES}no round is fused, "
        "the target decodes every token); drop it\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "window",
    ["{name: static, params: {gamma: 8}}", "{name: awc}", "{name: static, params: {fused: true}}"],
)
def test_the_window_policy_and_the_acceptance_model_may_stay(window: str) -> None:
    """A file that compares its distributed runs with a centralized one
    (``--sweep mode=distributed,centralized``) keeps its window policy."""
    given = ["mode=centralized", f"policies.window={window}", "acceptance={kind: decay}"]
    built = scenario_from_dict(tiny_scenario(), given)
    assert built.mode == "centralized"


def test_every_bundled_fleet_scenario_and_wisps_baseline_build_centralized() -> None:
    for name in bundled_scenarios():
        if name in ("zhu-pipeline", "wisv"):  # a drafting server; semantic verification
            continue
        assert load_scenario(name, ["mode=centralized"]).mode == "centralized"
    data = scenario(WispSetup(), "centralized", devices=4, slo_mix={"c2": 1.0})
    check_buildable(scenario_from_dict(data))
