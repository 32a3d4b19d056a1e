"""A session's kept reply (a retry of its last round gets it again) holds hidden rows for
a ``return_hidden`` session: its prompt's in its first round, 2.5 KiB a row at Gemma 3
270M's 640 floats, once outside every budget. They count against ``kv_budget_tokens``, a
row a token, beside the KV: evicted with the session's KV, a retry of that round is
refused, not answered without them; the session goes on (hand-built target:
test_engine_cache_state)."""

from __future__ import annotations

import numpy as np
import pytest

from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from tests.runtime.server.test_engine_cache_state import _engine, _open, _verify


def _retry(engine: VerificationEngine, call: VerifyCall) -> VerifyOutcome:
    outcome = engine.replay(call)
    assert isinstance(outcome, VerifyOutcome)
    return outcome


def test_kept_hidden_rows_count_against_the_budget_and_are_evicted_oldest_first() -> None:
    engine, _, _ = _engine(kv_budget_tokens=20)
    _open(engine, "h", prompt=(1, 2, 3, 4, 5, 6), hidden=True)
    first = _verify(engine, "h", (7, 8), None)  # KV 8 tokens, 8 hidden rows kept: 16 of 20
    assert first.target_hidden is not None and first.target_hidden.shape == (8, 2)
    retried = _retry(engine, VerifyCall("h", 6, (7, 8)))
    assert retried.target_hidden is not None
    assert np.array_equal(retried.target_hidden, first.target_hidden)
    _open(engine, "p")
    _verify(engine, "p", (4,), None)  # 2 KV tokens: 18 of 20
    assert engine.counters().num_evictions == 0
    _open(engine, "q", prompt=(1, 2, 3, 4))
    _verify(engine, "q", (5,), None)  # 5 more: 23 > 20, the oldest ("h") goes
    counters = engine.counters()
    assert (counters.num_evictions, counters.num_cached_tokens) == (1, 7)
    with pytest.raises(RequestError) as info:
        engine.replay(VerifyCall("h", 6, (7, 8)))
    assert info.value.code is ErrorCode.FAILED_PRECONDITION
    assert info.value.message == (
        "session 'h': the reply of its round at prefix_len 6 is no longer held (its 8 hidden "
        "rows were evicted under kv_budget_tokens); reopen the session"
    )
    later = _verify(engine, "h", (10,), None)  # the session goes on, re-prefilled
    assert later.committed_token_ids == (10, 11)
    assert later.num_forwarded == 10  # the whole context and the block, but the reply
    assert later.target_hidden is not None and later.target_hidden_start == 8  # from 9 - 1
    assert later.target_hidden.shape == (2, 2)  # positions 8 (token 9) and 9 (token 10)


def test_a_reply_without_hidden_rows_is_kept_whatever_the_budget_evicts() -> None:
    engine, _, _ = _engine(kv_budget_tokens=3)
    _open(engine, "p", prompt=(1, 2))
    first = _verify(engine, "p", (3,), None)  # KV 3 tokens
    _open(engine, "q", prompt=(5, 6))
    _verify(engine, "q", (7,), None)  # 3 more: "p"'s KV goes, its reply has no rows
    assert engine.counters().num_evictions == 1
    assert _retry(engine, VerifyCall("p", 2, (3,))) == first
