"""Exact pass grouping, verdicts, committed-token cuts and prompt lookup, from the
backend mutation pass."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.logit_rows import HostRows
from edgespec.runtime.backends.ngram import NgramDrafter, suffix_match_next
from edgespec.runtime.backends.padding import MAX_WASTE, SLACK_TOKENS, padding_ok, pass_groups
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import VerifyCall
from edgespec.runtime.server.verification import ExactRule, cut_committed, refuse_payloads

SAMPLED = SamplingParams(temperature=1.0)


def test_the_padding_constants() -> None:
    assert (MAX_WASTE, SLACK_TOKENS) == (1.5, 16)


def test_padding_ok_holds_at_exact_equality() -> None:
    # equal totals (1,000): both bounds read 2 * 67 = 1.5 * (67 + 1) + 2 * 16 exactly
    assert padding_ok([(67, 933), (1, 999)])
    assert not padding_ok([(68, 932), (1, 999)])
    assert pass_groups([(1, 999), (67, 933)]) == [[0, 1]]


def test_padding_ok_needs_the_attention_bound_too() -> None:
    # rows: 2 * 100 = 200 <= 1.5 * 120 + 32 = 212; attention products:
    # 2 * 100 * 100 = 20,000 > 1.5 * (10,000 + 400) + 32 * 100 = 18,800
    assert not padding_ok([(100, 0), (20, 0)])
    assert pass_groups([(100, 0), (20, 0)]) == [[1], [0]]
    # equal rows: both bounds hold without any slack
    assert padding_ok([(20, 0), (20, 0)])


def test_a_group_is_checked_as_a_whole_not_pairwise() -> None:
    # every neighbour pair fits, but the fourth item breaks the 3-item group's row bound:
    # 4 * 80 = 320 > 1.5 * 150 + 64 = 289
    shapes = [(80, 0), (10, 0), (40, 0), (20, 0)]
    assert padding_ok([(40, 0), (80, 0)])
    assert padding_ok([(10, 0), (20, 0), (40, 0)])
    assert pass_groups(shapes) == [[1, 3, 2], [0]]


def test_items_are_sorted_by_new_tokens_then_cached() -> None:
    assert pass_groups([(5, 10), (3, 20), (5, 2), (3, 1)]) == [[3, 1, 2, 0]]


def test_cut_committed_exact() -> None:
    assert cut_committed([1, 2, 3, 4], 2, {9}) == [1, 2]
    assert cut_committed([1, 2, 3, 4], 4, {9}) == [1, 2, 3, 4]
    assert cut_committed([1, 9, 3, 9], 5, {9}) == [1, 9]
    assert cut_committed([9, 1], 5, {9}) == [9]
    assert cut_committed([1, 2, 9], 2, {9}) == [1, 2]  # the EOS past the budget is cut


def test_refuse_payloads_accepts_the_named_ones() -> None:
    call = VerifyCall("s", 3, (1,), payloads={"snr_db": np.zeros(1, dtype=np.float32)})
    refuse_payloads(call, "snr", accepted=("snr_db",))
    with pytest.raises(RequestError, match=r"takes no payload\(s\) \['snr_db'\]"):
        refuse_payloads(call, "exact")


def test_a_sampled_empty_block_needs_no_draft_distribution() -> None:
    call = VerifyCall("s", 3, ())
    ExactRule().check(call, SAMPLED, 8)
    logits = np.full((1, 8), -30.0, dtype=np.float32)
    logits[0, 5] = 30.0  # all the mass on token 5
    verdict = ExactRule().verdict(call, SAMPLED, HostRows(logits), np.random.default_rng(0))
    assert verdict.result.committed_token_ids == (5,)
    assert verdict.result.num_accepted == 0
    assert verdict.path is None


def test_suffix_match_takes_the_most_recent_occurrence() -> None:
    assert suffix_match_next([1, 2, 1, 3, 1], 1, 1) == 3
    assert suffix_match_next([1, 2, 7, 1, 2, 8, 1, 2], 2, 2) == 8
    assert suffix_match_next([1, 2], 5, 1) is None
    assert suffix_match_next([2, 2], 5, 1) == 2


def test_ngram_drafter_repeats_the_last_token_without_a_match() -> None:
    rng = np.random.default_rng(0)
    assert NgramDrafter().propose([1, 2, 3], 2, 0.0, rng).token_ids == (3, 3)
    # a one-token suffix is enough for a match
    assert NgramDrafter().propose([4, 8, 3, 4], 1, 0.0, rng).token_ids == (8,)
    proposal = NgramDrafter(vocab_size=10).propose([4, 8, 3, 4], 3, 0.0, rng)
    assert proposal.token_ids == (8, 3, 4)
    assert proposal.probs is not None
    assert proposal.probs.dtype == np.float32
    assert proposal.probs.argmax(-1).tolist() == [8, 3, 4]
    assert proposal.probs.sum(-1).tolist() == [1.0, 1.0, 1.0]


def test_ngram_drafter_refuses_max_ngram_zero() -> None:
    with pytest.raises(ValueError, match="max_ngram must be >= 1, got 0"):
        NgramDrafter(max_ngram=0)
    assert NgramDrafter(max_ngram=1).max_ngram == 1
