"""The two goodputs on hand-built records (docs/METRICS.md): completed-request goodput
counts the output tokens of requests that finished inside the run; committed goodput
counts every token a round committed inside the run, finished request or not."""

from __future__ import annotations

import dataclasses

import pytest

from edgespec.core.types import RequestRecord, RoundRecord
from edgespec.metrics import MetricsAccumulator, summarize


def _round(rid: str, index: int, committed: int, end_s: float) -> RoundRecord:
    return RoundRecord(
        request_id=rid,
        round_index=index,
        start_s=end_s - 0.5,
        end_s=end_s,
        draft_s=0.2,
        uplink_s=0.05,
        queue_s=0.1,
        verify_s=0.1,
        downlink_s=0.05,
        num_drafted=4,
        num_accepted=committed - 1,
        num_committed=committed,
        batch_size=1,
    )


# Request "done" (6 tokens) finished in two rounds of 3; request "half" committed 2 + 3
# tokens of its 10 before the run ended at 4 s and never finished.
DONE = RequestRecord("done", "d0", "c", 0, 0.0, 0.5, 1.0, 5, 6, 2, 8, 4)
ROUNDS = (
    _round("done", 0, 3, 0.5),
    _round("done", 1, 3, 1.0),
    _round("half", 0, 2, 2.0),
    _round("half", 1, 3, 3.5),
)


def test_a_half_done_request_counts_in_committed_goodput_only() -> None:
    m = summarize([DONE], [], duration_s=4.0, num_servers=1, rounds=ROUNDS)
    assert m.num_output_tokens == 6 and m.goodput_tokens_per_s == 1.5  # 6 / 4 s
    assert m.num_committed_tokens == 11  # 3 + 3 + 2 + 3
    assert m.committed_goodput_tokens_per_s == 2.75  # 11 / 4 s


def test_without_rounds_the_committed_goodput_is_undefined() -> None:
    m = summarize([DONE], [], duration_s=4.0, num_servers=1)
    assert (m.num_committed_tokens, m.committed_goodput_tokens_per_s) == (None, None)
    assert m.to_dict()["committed_goodput_tokens_per_s"] is None
    empty = summarize([], [], duration_s=2.0, num_servers=1, rounds=[])
    assert empty.committed_goodput_tokens_per_s is None  # no round was counted


def test_rounds_that_commit_nothing_give_zero_not_none() -> None:
    m = summarize([], [], duration_s=2.0, num_servers=1, rounds=[_round("x", 0, 0, 1.0)])
    assert (m.num_committed_tokens, m.committed_goodput_tokens_per_s) == (0, 0.0)


def test_merged_shards_count_every_round_once() -> None:
    first, second = MetricsAccumulator(), MetricsAccumulator()
    first.add_request(DONE)
    for record in ROUNDS[:2]:
        first.add_round(record)
    for record in ROUNDS[2:]:
        second.add_round(record)
    first.merge(second)
    m = first.finish(4.0, 1)
    assert (m.num_committed_tokens, m.committed_goodput_tokens_per_s) == (11, 2.75)
    lone = MetricsAccumulator()
    lone.merge(MetricsAccumulator())  # neither counted a round
    assert lone.finish(1.0, 1).num_committed_tokens is None


def test_a_negative_commit_is_named() -> None:
    bad = dataclasses.replace(_round("r9", 4, 0, 1.0), num_committed=-1)
    with pytest.raises(ValueError, match=r"round 4 of request 'r9': num_committed must be >= 0"):
        MetricsAccumulator().add_round(bad)
