"""A scenario policy given its params alone is the default policy of its kind (the one the
run uses without them), as ``serve`` and ``draft`` configs have it
(edgespec.config.default_policy_names): ``edgespec sim FILE policies.window.params.gamma=2``
on a file naming no window policy was refused with ``config field 'policies.window.name':
required field is missing``. A policy field without a default (``stop_predictor.policy``,
``pipeline.verifier.policy``: none runs unless named) given only params was refused the
same way, ``'stop_predictor.policy.name': required field is missing``, naming neither the
policies it could be nor that none is a default: its refusal says both, at the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.policies import registry
from edgespec.sim.setup.scenario import scenario_from_dict
from tests.sim.helpers import sim_refusal, tiny_scenario

QUIET = ["--quiet", "--no-plots"]


def _without_window() -> dict[str, Any]:
    """The tiny scenario, whose ``policies`` names routing and batching but no window."""
    data = tiny_scenario(duration_s=1.0)
    assert "window" not in data["policies"]
    return data


def _without_policies() -> dict[str, Any]:
    data = tiny_scenario(duration_s=1.0)
    del data["policies"]
    return data


@pytest.mark.parametrize("data", [_without_window(), _without_policies()])
def test_params_alone_are_the_default_policys(data: dict[str, Any]) -> None:
    window = scenario_from_dict(data, ["policies.window.params.gamma=2"]).policies.window
    assert (window.name, dict(window.params)) == ("static", {"gamma": 2})


def test_a_files_params_alone_are_the_default_policys_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its error names the policy the params went to, at the file's line."""
    file = tmp_path / "s.yaml"
    file.write_text("duration_s: 1\npolicies:\n  window:\n    params: {gamma: 0}\n")
    assert sim_refusal([str(file)], tmp_path, capsys) == (
        f"edgespec sim: {file}:4: config field 'policies.window.params.gamma': window policy "
        "'static': gamma must be >= 1, got 0\n"
    )


def _metrics(tmp_path: Path, name: str, args: list[str]) -> dict[str, Any]:
    out = tmp_path / name
    assert main(["sim", *args, *QUIET, "--out", str(out)]) == 0
    metrics: dict[str, Any] = json.loads((out / "metrics.json").read_text())
    return metrics


def test_sim_runs_an_override_of_params_alone_as_the_default_policy_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump(_without_window()))
    alone = _metrics(tmp_path, "alone", [str(file), "policies.window.params.gamma=2"])
    named = "policies.window={name: static, params: {gamma: 2}}"
    assert alone == _metrics(tmp_path, "named", [str(file), named])
    assert alone != _metrics(tmp_path, "default", [str(file)])  # gamma 4: the params count
    assert capsys.readouterr().err == ""


STOP = f"name is required: no stop policy runs here by default; known: {sorted(registry.STOP)}"
BATCHING = (
    f"name is required: no batching policy runs here by default; known: {sorted(registry.BATCHING)}"
)


def test_a_policy_without_a_default_needs_its_name_and_is_told_the_names() -> None:
    data = {"stop_predictor": {"policy": {"params": {"threshold": 0.5}}}}
    with pytest.raises(ConfigError) as info:
        scenario_from_dict(data)
    assert str(info.value) == f"config field 'stop_predictor.policy': {STOP}"


@pytest.mark.parametrize(
    ("scenario", "override", "refusal"),
    [
        (
            "default",
            "stop_predictor.policy.params.threshold=0.5",
            f"'stop_predictor.policy': {STOP}",
        ),
        (
            "zhu-pipeline",
            "pipeline.stop_predictor.policy.params.threshold=0.5",
            f"'pipeline.stop_predictor.policy': {STOP}",
        ),
        (
            "zhu-pipeline",
            "pipeline.verifier.policy.params.x=1",
            f"'pipeline.verifier.policy': {BATCHING}",
        ),
    ],
)
def test_an_override_of_params_alone_without_a_default_is_refused_naming_the_policies(
    scenario: str, override: str, refusal: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was ``config field '...policy.name': required field is missing`` (the zhu-pipeline's
    at the file's ``pipeline:`` line, though the override gave the policy)."""
    err = sim_refusal([scenario, override], tmp_path, capsys)
    assert err == f"edgespec sim: config field {refusal}\n"


def test_a_files_policy_of_params_alone_without_a_default_is_refused_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "s.yaml"
    file.write_text(
        "duration_s: 1\nstop_predictor:\n  confusion_tpr: 0.9\n  confusion_fpr: 0.1\n"
        "  policy:\n    params: {threshold: 0.5}\n"
    )
    assert sim_refusal([str(file)], tmp_path, capsys) == (
        f"edgespec sim: {file}:5: config field 'stop_predictor.policy': {STOP}\n"
    )


def test_a_misspelt_name_beside_the_params_is_named_as_the_unknown_field() -> None:
    with pytest.raises(ConfigError) as info:
        scenario_from_dict({"stop_predictor": {"policy": {"nmae": "mlp", "params": {}}}})
    assert str(info.value) == (
        "config field 'stop_predictor.policy.nmae': unknown field; known: ['name', 'params'] "
        "(did you mean 'name'?)"
    )
