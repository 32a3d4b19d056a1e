"""The handler sets' record builders (edgespec.sim.loop.records): the same frozen
RoundRecord and BatchRecord the classes' __init__ builds."""

from __future__ import annotations

import dataclasses

import pytest

from edgespec.core.types import BatchRecord, RoundRecord
from edgespec.sim.loop.records import batch_record, round_record


def test_round_record_is_the_dataclass() -> None:
    fields = ("r7", 3, 1.5, 2.25, 0.1, 0.02, 0.3, 0.04, 0.05, 4, 3, 4, 8, 2, None, 5, True)
    built = round_record(*fields)
    assert type(built) is RoundRecord
    assert built == RoundRecord(*fields)
    assert hash(built) == hash(RoundRecord(*fields))
    assert dataclasses.astuple(built) == fields
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.end_s = 9.0  # type: ignore[misc]


def test_batch_record_is_the_dataclass() -> None:
    fields = (1, 0.5, 0.75, 3, 120, 40)
    built = batch_record(*fields)
    assert type(built) is BatchRecord
    assert built == BatchRecord(*fields)
    assert dataclasses.astuple(built) == fields
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.batch_size = 4  # type: ignore[misc]
