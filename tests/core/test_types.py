from __future__ import annotations

import dataclasses

import pytest

from edgespec.core.types import SamplingParams, VerifyResult


def test_verify_result_invariants() -> None:
    with pytest.raises(ValueError, match="first_rejection must be 1"):
        VerifyResult(3, 1, None, 5, (7,))
    with pytest.raises(ValueError, match="exactly num_accepted"):
        VerifyResult(3, 2, 2, 5, (7,))
    with pytest.raises(ValueError, match="outside"):
        VerifyResult(3, 4, None, 5, (1, 2, 3, 4))


def test_records_are_frozen() -> None:
    result = VerifyResult(2, 2, None, 9, (1, 2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.extra_token = 3  # type: ignore[misc]


def test_sampling_params_validation() -> None:
    assert SamplingParams().greedy
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0.0)
