"""The one function both hosts ask a decision head through
(:func:`edgespec.policies.semantic.judge.judge_mismatches`): the inputs it builds (float64
rows, then the channel's CSI features in order) and its check of the head's answer (one
bool per mismatch, else a one-line PolicyContractError naming the head)."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.policies.contracts import PolicyContractError, check_head_answer
from edgespec.policies.semantic.csi import ChannelState, csi_features
from edgespec.policies.semantic.judge import judge_mismatches
from tests.policies.semantic.broken_heads import (
    BROKEN_ANSWERS,
    broken_head,
    contract_message,
    seeded_head,
)

CHANNEL = ChannelState(uplink_bps=20e6, per=0.05, rtt_s=0.04)


def test_the_inputs_are_the_float64_rows_then_the_csi_features() -> None:
    head = seeded_head(1)
    rng = np.random.default_rng(2)
    hd = rng.normal(size=(3, 8)).astype(np.float32)
    ht = rng.normal(size=(3, 12)).astype(np.float32)
    x = np.concatenate([hd, ht, np.tile(csi_features(CHANNEL), (3, 1))], axis=1)
    expected = head.rejects(x.astype(np.float64), 9)
    answer = judge_mismatches(head, hd, ht, CHANNEL, 9)
    assert answer.dtype == np.bool_ and answer.tolist() == expected.tolist()
    # one 1-D row is one mismatch, as the rollout asks
    assert judge_mismatches(head, hd[1], ht[1], CHANNEL, 9).tolist() == [expected[1]]


@pytest.mark.parametrize("name", sorted(BROKEN_ANSWERS))
@pytest.mark.parametrize("n", [1, 3])
def test_an_answer_out_of_contract_is_named_in_one_line(name: str, n: int) -> None:
    rows = np.zeros((n, 8)), np.zeros((n, 12))
    with pytest.raises(PolicyContractError) as caught:
        judge_mismatches(broken_head(name), *rows, CHANNEL, 12)
    assert str(caught.value) == contract_message(name, n)
    assert "\n" not in str(caught.value)


def test_the_messages_in_full() -> None:
    with pytest.raises(PolicyContractError) as caught:
        judge_mismatches(broken_head("one too many"), np.zeros(8), np.zeros(12), CHANNEL, 12)
    assert str(caught.value) == (
        "decision head BrokenHead returned a bool array of shape (2,) for 1 mismatch; "
        "expected a 1-D bool array of shape (1,), one bool per mismatch"
    )
    with pytest.raises(PolicyContractError) as caught:
        check_head_answer(seeded_head(0), np.zeros((2, 1), dtype=np.bool_), 2)
    assert str(caught.value) == (
        "decision head DecisionHead returned a bool array of shape (2, 1) for 2 mismatches; "
        "expected a 1-D bool array of shape (2,), one bool per mismatch"
    )
    with pytest.raises(PolicyContractError) as caught:
        check_head_answer(seeded_head(0), None, 2)
    assert str(caught.value).startswith("decision head DecisionHead returned NoneType None ")


def test_a_good_answer_is_returned_as_it_is() -> None:
    answer = np.asarray([True, False])
    assert check_head_answer(seeded_head(0), answer, 2) is answer
