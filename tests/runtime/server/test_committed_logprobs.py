"""The committed tokens' log-probabilities a session asks for: the target's raw rows (no
bias, penalty, temperature or cut), the row each committed token was chosen from (a
chain's, a tree's path), the likeliest alternatives by probability then id; over the wire
as they were; refused where no rows back them (semantic sessions, Generate)."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.types import SamplingParams, VerifyResult
from edgespec.runtime.backends.logit_rows import HostRows
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome, VerifyReply
from edgespec.runtime.server.committed_logprobs import committed_logprobs, committed_rows
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.testing import tiny_llama
from edgespec.runtime.wire.codec import pb, reply_from_proto, reply_to_proto
from edgespec.runtime.wire.inprocess import target_greedy_decode
from edgespec.runtime.wire.logprob_codec import logprobs_from_proto, logprobs_to_proto
from tests.runtime.greedy_oracles import target_logprobs

PROMPT = (40, 2, 33, 17, 8, 2)


def _target() -> TransformersTarget:
    return TransformersTarget(tiny_llama(seed=1), eos_token_ids=frozenset())


def _verify(
    engine: VerificationEngine, sampling: SamplingParams, call: VerifyCall
) -> VerifyOutcome:
    engine.open_session(SessionSpec(call.session_id, "c", PROMPT, sampling))
    outcome = engine.verify_batch([call])[0]
    assert isinstance(outcome, VerifyOutcome)
    return outcome


@pytest.mark.parametrize("wrong_at", [None, 2])
def test_a_chains_committed_tokens_get_their_rows_log_probabilities(wrong_at: int | None) -> None:
    """Penalties and a bias change the committed tokens, not what their log-probabilities
    are read from: the target's own rows."""
    target = _target()
    greedy = target_greedy_decode(target, PROMPT, 4)
    draft = list(greedy)
    if wrong_at is not None:
        draft[wrong_at] = (draft[wrong_at] + 1) % 64
    sampling = SamplingParams(max_new_tokens=8, logprobs=3, presence_penalty=2.0,
                              logit_bias=((greedy[3], -5.0),))  # fmt: skip
    outcome = _verify(
        VerificationEngine(target), sampling, VerifyCall("s", len(PROMPT), tuple(draft))
    )
    committed = outcome.committed_token_ids
    assert outcome.logprobs is not None
    assert len(committed) == (4 if wrong_at is None else 3)  # the bias: greedy[3] corrected
    assert wrong_at is not None or committed[3] != greedy[3]
    expected = target_logprobs(target, PROMPT, committed, 3)
    for got, (lp, top) in zip(outcome.logprobs, expected, strict=True):
        assert got.logprob == pytest.approx(lp, abs=1e-6)
        assert [t for t, _ in got.top] == [t for t, _ in top]
        assert [v for _, v in got.top] == pytest.approx([v for _, v in top], abs=1e-6)


def test_a_trees_tokens_are_read_from_their_paths_rows() -> None:
    assert committed_rows(3, None) == [0, 1, 2]
    assert committed_rows(3, (1, 3)) == [0, 2, 4]  # root row, then node 1's, node 3's
    assert committed_rows(2, (1, 3)) == [0, 2]  # cut by the budget or an EOS
    target = _target()
    greedy = target_greedy_decode(target, PROMPT, 3)
    wrong = (greedy[0] + 1) % 64
    call = VerifyCall("t", len(PROMPT), (wrong, greedy[0], greedy[1]), draft_parents=(-1, -1, 1))
    outcome = _verify(
        VerificationEngine(target), SamplingParams(max_new_tokens=8, logprobs=0), call
    )
    assert outcome.committed_token_ids == greedy and outcome.logprobs is not None
    expected = target_logprobs(target, PROMPT, greedy, 0)
    assert [t.logprob for t in outcome.logprobs] == pytest.approx([lp for lp, _ in expected])
    assert all(t.top == () for t in outcome.logprobs)


def test_ties_rank_by_token_id() -> None:
    rows = HostRows(np.array([[1.0, 3.0, 3.0, 0.0, 3.0]], dtype=np.float32))
    (got,) = committed_logprobs(rows, (0,), None, 2)
    assert [t for t, _ in got.top] == [1, 2]
    assert got.logprob == pytest.approx(1.0 - np.log(np.exp([1.0, 3, 3, 0, 3]).sum()))


def test_log_probabilities_cross_the_wire_and_a_miscount_is_refused() -> None:
    logprobs = (
        TokenLogprobs(-0.5, ((3, -0.5), (7, -1.25))),
        TokenLogprobs(-2.0, ((1, -0.1), (3, -2.0))),
    )
    outcome = VerifyOutcome(VerifyResult(2, 1, 1, 3, (5,)), (5, 3), False, 3, logprobs=logprobs)
    msg = reply_to_proto(VerifyReply(outcome, 0.0, 0.0, 1))
    assert (
        reply_from_proto(
            pb.VerifyResponse.FromString(msg.SerializeToString()), (5, 9)
        ).outcome.logprobs
        == logprobs
    )
    del msg.top_logprob_ids[-1]
    with pytest.raises(RequestError) as info:
        reply_from_proto(msg, (5, 9))
    assert str(info.value) == (
        "INTERNAL: malformed VerifyResponse: 2 committed_logprobs and 3 top pairs (2 each) for "
        "2 committed tokens"
    )


def test_a_generate_chunk_carries_them_in_the_same_fields() -> None:
    logprobs = (TokenLogprobs(-0.5, ((3, -0.5),)), TokenLogprobs(-2.0, ((1, -0.1),)))
    chunk = logprobs_to_proto(pb.GenerateChunk(token_ids=[3, 4], finished=True), logprobs)
    assert logprobs_from_proto(pb.GenerateChunk.FromString(chunk.SerializeToString()), 2) == (
        logprobs
    )
    assert logprobs_from_proto(pb.GenerateChunk(token_ids=[3]), 1) is None  # none asked
    with pytest.raises(RequestError) as info:
        logprobs_from_proto(chunk, 3)
    assert str(info.value) == (
        "INTERNAL: malformed GenerateChunk: 2 committed_logprobs and 2 top pairs (1 each) for 3 "
        "committed tokens"
    )


def test_sampling_params_refuse_more_than_20_alternatives() -> None:
    with pytest.raises(ValueError) as info:
        SamplingParams(logprobs=21)
    assert str(info.value) == "logprobs must be None or in [0, 20], got 21"
