"""core.frozen.frozen_builder: instances equal to the dataclass's own, and still frozen."""

from __future__ import annotations

import dataclasses

import pytest

from edgespec.core.frozen import frozen_builder
from edgespec.core.types import BatchPlan, PendingVerification, SamplingParams
from edgespec.policies.interfaces import WindowObservation


def test_built_instances_equal_constructed_ones() -> None:
    fields = (3, "r1", "c1", 1.5, 4, 9, 120, "gold", 2.25, 2.8)
    built = frozen_builder(PendingVerification)(*fields)
    assert type(built) is PendingVerification
    assert built == PendingVerification(*fields)
    assert hash(built) == hash(PendingVerification(*fields))
    assert built.num_context_tokens == 129
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.entry_id = 4  # type: ignore[misc]
    obs = frozen_builder(WindowObservation)(4, None, 2, 0, 0.01, None, True, "3>1")
    assert obs == WindowObservation(4, None, 2, 0, 0.01, None, previous_fused=True, pair="3>1")
    assert frozen_builder(BatchPlan)((1, 2), "fcfs") == BatchPlan((1, 2), reason="fcfs")


def test_refuses_classes_with_validation() -> None:
    with pytest.raises(TypeError, match="SamplingParams"):
        frozen_builder(SamplingParams)  # its __post_init__ validates
