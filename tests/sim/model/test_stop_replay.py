"""``replayed_prefix``, by hand: how many draft positions a stop predictor lets a round
send when the simulator replays a trace's decisions (without the torch-backed parity test)."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.sim.model.stop_model import _Keeps, replayed_prefix


def keeps(on_prefix: list[bool], after: dict[int, list[bool]] | None = None) -> _Keeps:
    return _Keeps(
        np.array(on_prefix, dtype=bool),
        {k: np.array(v, dtype=bool) for k, v in (after or {}).items()},
    )


SEQ = (1, 1, 0, 1, 1, 1)  # the draft's first rejection at position 2
ALL = [True] * 6


@pytest.mark.parametrize(
    ("on_prefix", "after", "position", "gamma", "sent"),
    [
        (ALL, None, 0, 2, 2),  # every position kept: the whole window
        ([True, False, True, True, True, True], None, 0, 4, 1),  # stops before position 1
        (ALL, None, 0, 6, 6),  # past the rejection, no features after it: the prefix's
        (ALL, {2: [True, False]}, 0, 6, 4),  # the draft's own continuation says stop
        (ALL, {2: [True, True, True]}, 0, 6, 6),
        ([True, True, True, True, False, True], {2: [True]}, 0, 6, 4),  # too few: prefix
        ([True, True, True, True, True, False], None, 3, 3, 2),  # 3, 4 kept, 5 not
        ([True, False, True, True, True, True], None, 5, 3, 2),  # wraps: 5, 0 kept; 1 stops
        ([False, True, False, True, True, True], None, 4, 4, 2),  # 4, 5, then 0 stops
    ],
)
def test_replayed_prefix(
    on_prefix: list[bool], after: dict[int, list[bool]] | None, position: int, gamma: int, sent: int
) -> None:
    assert replayed_prefix(SEQ, keeps(on_prefix, after), position, gamma) == sent


def test_a_kept_rejection_is_sent_and_the_continuation_decides_from_there() -> None:
    # position 2 rejected but kept: it is sent; the continuation's first decision (stop)
    # ends the round there, even though the prefix would keep going
    assert replayed_prefix(SEQ, keeps(ALL, {2: [False]}), 1, 5) == 2
    assert replayed_prefix(SEQ, keeps(ALL, {2: [True, False]}), 1, 5) == 3
    # two kept after it, then no more features: the prefix's decision at 5 stands in
    assert replayed_prefix(SEQ, keeps(ALL, {2: [True, True]}), 1, 5) == 5
