"""The docs say how to run a trained WC-DNN in the simulator (was: nowhere; README and
docs/LEARN.md wrote one with ``train awc --out`` and stopped): AWC's ``file`` parameter, in
one override that README.md, docs/LEARN.md and docs/SIMULATOR.md quote alike. That
override, applied as ``edgespec sim`` applies it, builds an AWC on exactly those weights;
the refusal SIMULATOR.md quotes for a missing file is the one given."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from edgespec.config import ConfigError
from edgespec.policies.awc import AwcWindow
from edgespec.policies.registry import build_policy_at
from edgespec.policies.wc_dnn import load_wc_dnn
from edgespec.sim.setup.scenario import scenario_from_dict

ROOT = Path(__file__).resolve().parents[2]
OVERRIDE = "policies.window={name: awc, params: {file: runs/wc-dnn.json}}"
BUNDLED = ROOT / "edgespec" / "data" / "awc" / "wc-dnn.json"


@pytest.mark.parametrize("doc", ["README.md", "docs/LEARN.md", "docs/SIMULATOR.md"])
def test_the_docs_quote_the_override(doc: str) -> None:
    assert f"edgespec sim '{OVERRIDE}'" in (ROOT / doc).read_text() or (
        f"`'{OVERRIDE}'`" in (ROOT / doc).read_text()
    )


def test_the_override_runs_awc_on_the_named_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Weights other than the bundled default's (their means moved), as a trained file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    bundled = load_wc_dnn(str(BUNDLED))
    trained = dataclasses.replace(bundled, mean=bundled.mean + 1.0)
    (tmp_path / "runs" / "wc-dnn.json").write_text(json.dumps(trained.to_json()))
    spec = scenario_from_dict({}, [OVERRIDE]).policies.window
    window = build_policy_at("policies.window", "window", spec)
    assert isinstance(window, AwcWindow)
    assert np.array_equal(window.model.mean, bundled.mean + 1.0)


def test_a_missing_file_is_refused_as_simulator_md_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = scenario_from_dict({}, [OVERRIDE]).policies.window
    with pytest.raises(ConfigError) as refused:
        build_policy_at("policies.window", "window", spec)
    message = "window policy 'awc': WC-DNN weights file runs/wc-dnn.json does not exist"
    assert str(refused.value) == f"config field 'policies.window.params.file': {message}"
    assert f"(`{message}`)" in (ROOT / "docs" / "SIMULATOR.md").read_text()
