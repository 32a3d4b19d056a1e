"""The stop-drafting policy: K_θ, draft passes, the answer check, the predictor file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from edgespec.policies.registry import PolicyConfigError, build_policy
from edgespec.policies.stop_drafting import (
    MlpStopPolicy,
    StopPolicyContractError,
    checked_keep_mask,
    draft_passes,
    kept_prefix,
    load_stop_policy,
)
from tests.policies.stop_helpers import confidence_stop


def test_kept_prefix_is_eq25() -> None:
    keep = [True, True, False, True, True, True]
    assert kept_prefix(keep, 0, 4) == 2  # stops at the first predicted rejection
    assert kept_prefix(keep, 3, 4) == 3  # runs out of positions
    assert kept_prefix(keep, 3, 2) == 2  # capped at K_max
    assert kept_prefix(keep, 2, 4) == 0  # position 1 predicted rejected: empty block


def test_draft_passes_count_the_stopped_token() -> None:
    assert draft_passes(2, 4) == 3
    assert draft_passes(0, 4) == 1
    assert draft_passes(4, 4) == 4


def test_mlp_keeps_by_threshold() -> None:
    rows = np.array([[0.9, 0, 0, 0, 0], [0.45, 0, 0, 0, 0], [0.1, 0, 0, 0, 0]], dtype=float)
    assert confidence_stop(gain=20.0).keep_mask(rows).tolist() == [True, False, False]
    assert confidence_stop(gain=20.0, threshold=0.2).keep_mask(rows).tolist() == [True, True, False]


def test_checked_keep_mask_rejects_bad_answers_and_inputs() -> None:
    class Broken:
        def keep_mask(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
            return np.ones(len(features) + 1, dtype=bool)

    with pytest.raises(StopPolicyContractError, match="Broken returned bool of shape"):
        checked_keep_mask(Broken(), np.zeros((2, 5)))
    with pytest.raises(ValueError, match="n × 5"):
        checked_keep_mask(confidence_stop(gain=20.0), np.zeros((2, 6)))


def test_file_round_trip_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(confidence_stop(gain=20.0, threshold=0.3).to_json()))
    loaded = load_stop_policy(str(path))
    assert loaded.threshold == 0.3
    assert load_stop_policy(str(path), threshold=0.8).threshold == 0.8
    built = build_policy("stop", "mlp", {"file": str(path)})
    assert isinstance(built, MlpStopPolicy)
    with pytest.raises(ValueError, match="does not exist"):
        load_stop_policy(str(tmp_path / "missing.json"))
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        load_stop_policy(str(path))
    path.write_text(json.dumps({"kind": "tree"}))
    with pytest.raises(ValueError, match="not an MLP stop predictor"):
        load_stop_policy(str(path))
    with pytest.raises(PolicyConfigError, match="stop policy 'mlp'"):
        build_policy("stop", "mlp", {"file": str(tmp_path / "missing.json")})
