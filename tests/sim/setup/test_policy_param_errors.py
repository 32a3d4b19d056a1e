"""A scenario's policy parameter out of range stops ``edgespec sim`` with one line naming
the parameter's field, its bound and its value (exit status 2): never a traceback, nor an
allocation sized by the value (``pipeline.max_output_tokens=10**9`` asked for 87 GiB)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.sim.helpers import sim_refusal, tiny_scenario


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "policies.batching={name: wisp, params: "
            "{a_s: 0.0001, b_compute_s: 0, b_read_s: 0, c_s: 0.01, guard_s: -1}}",
            "'policies.batching.params.guard_s': batching policy 'wisp': "
            "guard_s must be a finite number >= 0, got -1",
        ),
        (
            "policies.window={name: dynamic, params: {raise_above: -0.5}}",
            "'policies.window.params.raise_above': window policy 'dynamic': "
            "need 0 <= lower_below <= raise_above <= 1, got 0.25, -0.5",
        ),
    ],
)
def test_a_policy_parameter_is_named_at_its_field(
    override: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(yaml.safe_dump(tiny_scenario(duration_s=1.0)))
    assert sim_refusal([str(scenario), override], tmp_path, capsys) == (
        f"edgespec sim: config field {message}\n"
    )


def test_the_planned_output_length_is_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was a numpy traceback allocating 87 GiB; refused at the field given, before planning."""
    override = "pipeline.max_output_tokens=1000000000"
    assert sim_refusal(["zhu-pipeline", override], tmp_path, capsys) == (
        "edgespec sim: config field 'pipeline.max_output_tokens': must be <= 32,768 (the "
        "planner's tables grow with it), got 1000000000\n"
    )
