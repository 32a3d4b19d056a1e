"""``decodes-first`` batching: the oldest entry, then decoding rounds, then prefills."""

from __future__ import annotations

import pytest

from edgespec.core.types import PendingVerification
from edgespec.policies.batching import DecodesFirstBatching, FcfsBatching
from edgespec.policies.interfaces import BatchLimits
from edgespec.policies.registry import PolicyConfigError, build_policy

DRAFT = 4  # every entry's draft tokens


def entry(entry_id: int, enq: float, uncached: int) -> PendingVerification:
    """A queued verification forwarding ``uncached`` context tokens beyond its draft."""
    return PendingVerification(
        entry_id, f"s{entry_id}", "c", enq, DRAFT, uncached + DRAFT if uncached < 512 else 512, 0
    )


PARTS = [entry(i, 0.1 * i, 2000) for i in range(8)]  # 8 long prompts' parts of 512
DECODES = [entry(8, 1.0, 1), entry(9, 1.1, 1)]  # two sessions' next rounds, later


def test_fcfs_leaves_the_decoding_rounds_out_while_parts_fill_the_budget() -> None:
    """The case the policy exists for: 8 parts of 512 fill 4,096 tokens exactly."""
    plan = FcfsBatching().select([*DECODES, *PARTS], 2.0, BatchLimits(max_batch_tokens=4096))
    assert plan.entry_ids == tuple(range(8))


def test_the_decoding_rounds_go_right_after_the_oldest_entry() -> None:
    plan = DecodesFirstBatching().select(
        [*DECODES, *PARTS], 2.0, BatchLimits(max_batch_tokens=4096)
    )
    # 512 + 2 × 5 + 6 × 512 = 3,594; a seventh part would pass 4,096
    assert plan.entry_ids == (0, 8, 9, 1, 2, 3, 4, 5, 6)
    assert plan.reason == "decodes-first"


def test_the_oldest_entry_goes_first_even_when_decoding_rounds_would_fill_the_batch() -> None:
    decodes = [entry(10 + i, 1.0 + i, 1) for i in range(4)]
    plan = DecodesFirstBatching().select([*decodes, PARTS[3]], 9.0, BatchLimits(max_batch_size=3))
    assert plan.entry_ids == (3, 10, 11)


def test_the_bound_is_on_uncached_context_beyond_the_draft_and_inclusive() -> None:
    head = entry(0, 0.0, 1)
    queue = [head, entry(1, 1.0, 17), entry(2, 2.0, 16), entry(3, 3.0, 0)]
    assert DecodesFirstBatching().select(queue, 4.0, BatchLimits()).entry_ids == (0, 2, 3, 1)
    bounded = DecodesFirstBatching(max_decode_uncached_tokens=0)
    assert bounded.select(queue, 4.0, BatchLimits()).entry_ids == (0, 3, 1, 2)


def test_arrival_order_within_each_kind_with_ties_by_entry_id() -> None:
    queue = [entry(5, 1.0, 1), entry(4, 1.0, 1), entry(3, 0.5, 900), entry(2, 0.7, 900)]
    queue.append(entry(1, 0.2, 900))
    assert DecodesFirstBatching().select(queue, 2.0, BatchLimits()).entry_ids == (1, 4, 5, 3, 2)


def test_empty_queue_waits() -> None:
    plan = DecodesFirstBatching().select([], 0.0, BatchLimits())
    assert (plan.entry_ids, plan.reason) == ((), "decodes-first:empty")


def test_a_negative_bound_is_refused_at_its_field() -> None:
    message = "max_decode_uncached_tokens must be >= 0, got -1"
    with pytest.raises(PolicyConfigError, match=message) as info:
        build_policy("batching", "decodes-first", {"max_decode_uncached_tokens": -1})
    assert "max_decode_uncached_tokens" in str(info.value)


def test_prefills_go_one_client_at_a_time_in_turn() -> None:
    """Client a's three long prompts came first; b's and c's first prompts go before a's
    second: the oldest entry (a's first), the decoding round, then each other client's
    oldest prefill, then each one's second."""

    def prefill(entry_id: int, enq: float, client: str) -> PendingVerification:
        return PendingVerification(entry_id, f"s{entry_id}", client, enq, DRAFT, 512, 0)

    queue = [prefill(1, 0.0, "a"), prefill(2, 0.1, "a"), prefill(3, 0.2, "a")]
    queue += [prefill(4, 0.3, "b"), prefill(5, 0.4, "b"), prefill(6, 0.5, "c")]
    queue.append(entry(7, 0.6, 1))  # a decoding round
    limits = BatchLimits(max_batch_size=5)
    assert DecodesFirstBatching().select(queue, 1.0, limits).entry_ids == (1, 7, 4, 6, 2)
    in_arrival = DecodesFirstBatching(prefills_in_turn=False)
    assert in_arrival.select(queue, 1.0, limits).entry_ids == (1, 7, 2, 3, 4)


def test_a_prefill_budget_keeps_the_pass_short_and_counts_a_prefill_head() -> None:
    """``max_prefill_tokens`` 1,024: the head's part (512) and one more part go with the
    decoding rounds; the other parts wait (without it, six more parts went: 3,594 tokens)."""
    budgeted = DecodesFirstBatching(max_prefill_tokens=1024)
    limits = BatchLimits(max_batch_tokens=4096)
    assert budgeted.select([*DECODES, *PARTS], 2.0, limits).entry_ids == (0, 8, 9, 1)
    decoding_head = entry(20, -1.0, 1)  # the oldest is a decoding round: two parts fit
    queue = [decoding_head, *DECODES, *PARTS]
    assert budgeted.select(queue, 2.0, limits).entry_ids == (20, 8, 9, 0, 1)


def test_a_prefill_over_what_is_left_of_the_budget_waits_and_a_smaller_one_goes() -> None:
    small = entry(30, 0.95, 100)  # a short prompt's first round: 104 new tokens
    budgeted = DecodesFirstBatching(max_prefill_tokens=700, prefills_in_turn=False)
    queue = [*PARTS[:3], small]
    assert budgeted.select(queue, 2.0, BatchLimits()).entry_ids == (0, 30)


def test_a_prefill_budget_below_one_is_refused_at_its_field() -> None:
    message = r"max_prefill_tokens must be >= 1 \(or null: no budget\), got 0"
    with pytest.raises(PolicyConfigError, match=message):
        build_policy("batching", "decodes-first", {"max_prefill_tokens": 0})
    assert build_policy("batching", "decodes-first", {"max_prefill_tokens": None}) == (
        DecodesFirstBatching()
    )
