"""VerificationEngine on a hand-built target whose KV cache is its token ids: the exact
cache each verification reuses, EOS in mid-block, hidden rows cut at the token budget,
sessions that change, close or expire around a forward pass, and a failing backend."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.backends.logit_rows import HostRows
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine

VOCAB = 16


class SuccessorTarget:
    """Greedy target whose next token after ``t`` is ``(t + 1) % 16``. Its KV state is the
    tuple of token ids it covers (so a test sees exactly what the engine cached), and a
    hidden row is ``(token, index among the item's new tokens)``. ``on_forward`` runs
    inside every forward pass, before the outputs are made; it may raise."""

    vocab_size = VOCAB
    max_context_tokens = 64

    def __init__(self, eos: frozenset[int] = frozenset()) -> None:
        self.eos_token_ids = eos
        self.items: list[ForwardItem] = []
        self.on_forward: Callable[[], None] = lambda: None

    def forward(self, items: Sequence[ForwardItem]) -> list[ForwardOutput]:
        self.items.extend(items)
        self.on_forward()
        outputs = []
        for item in items:
            prefix: tuple[int, ...] = () if item.kv is None else item.kv
            assert len(prefix) == item.kv_len
            new = item.new_token_ids
            logits = np.zeros((item.num_logits, VOCAB), dtype=np.float32)
            for row, token in enumerate(new[len(new) - item.num_logits :]):
                logits[row, (token + 1) % VOCAB] = 1.0
            hidden = (
                np.array([[t, i] for i, t in enumerate(new)], dtype=np.float32)
                if item.want_hidden
                else None
            )
            outputs.append(ForwardOutput(HostRows(logits), (*prefix, *new), hidden))
        return outputs

    def crop(self, kv: tuple[int, ...], num_tokens: int) -> tuple[int, ...]:
        return kv[:num_tokens]

    def gather(self, kv: tuple[int, ...], positions: Sequence[int]) -> tuple[int, ...]:
        return tuple(kv[p] for p in positions)

    def kv_bytes(self, kv: tuple[int, ...]) -> int:
        return 2 * len(kv)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _engine(
    eos: frozenset[int] = frozenset(), kv_budget_tokens: int = 65536
) -> tuple[VerificationEngine, SuccessorTarget, Clock]:
    backend, clock = SuccessorTarget(eos), Clock()
    return VerificationEngine(backend, kv_budget_tokens, clock=clock), backend, clock


def _open(
    engine: VerificationEngine,
    sid: str,
    prompt: tuple[int, ...] = (3,),
    max_new: int = 20,
    hidden: bool = False,
) -> None:
    sampling = SamplingParams(max_new_tokens=max_new)
    engine.open_session(SessionSpec(sid, "c", prompt, sampling, return_hidden=hidden))


def _verify(
    engine: VerificationEngine, sid: str, draft: tuple[int, ...], parents: tuple[int, ...] | None
) -> VerifyOutcome:
    call = VerifyCall(sid, len(engine.session_tokens(sid)), draft, draft_parents=parents)
    engine.validate(call, 8)
    out = engine.verify_batch([call])[0]
    assert isinstance(out, VerifyOutcome)
    return out


@pytest.mark.parametrize(
    ("draft", "parents", "committed", "kv"),
    [
        # chain: 4, 5 accepted, 9 rejected; the extra token 6 is forwarded next round
        ((4, 5, 9), None, (4, 5, 6), (3, 4, 5)),
        # tree: root children 9 (node 0) and 4 (node 1); 4's children 1 (2) and 5 (3);
        # the accepted path is nodes 1, 3: only their entries stay, in path order
        ((9, 4, 1, 5), (-1, -1, 1, 1), (4, 5, 6), (3, 4, 5)),
    ],
)
def test_cache_keeps_exactly_the_accepted_tokens(
    draft: tuple[int, ...],
    parents: tuple[int, ...] | None,
    committed: tuple[int, ...],
    kv: tuple[int, ...],
) -> None:
    engine, backend, _ = _engine()
    _open(engine, "s")
    out = _verify(engine, "s", draft, parents)
    assert out.committed_token_ids == committed
    assert engine.counters().num_cached_tokens == len(kv)
    _verify(engine, "s", (7, 8), None)
    follow_up = backend.items[-1]
    assert (follow_up.kv, follow_up.kv_len, follow_up.new_token_ids) == (kv, 3, (6, 7, 8))
    assert engine.session_tokens("s") == (3, 4, 5, 6, 7, 8, 9)


def test_eos_late_in_the_block_ends_the_session_and_frees_its_cache() -> None:
    engine, _, _ = _engine(eos=frozenset({6}))
    _open(engine, "s")
    _open(engine, "other")
    _verify(engine, "other", (4,), None)
    out = _verify(engine, "s", (4, 5, 6, 7), None)
    assert (out.committed_token_ids, out.finished) == ((4, 5, 6), True)
    assert engine.session_finished("s")
    assert engine.num_live_sessions() == 1
    # only "other" still holds KV (prompt + 1 accepted draft token)
    assert (engine.counters().num_cached_tokens, engine.counters().num_cached_bytes) == (2, 4)


def test_the_cached_tokens_count_the_sessions_in_a_pass() -> None:
    """``num_cached_tokens`` / ``_bytes`` (Stats, ``edgespec_cached_tokens``) read while a
    pass runs (Prometheus is scraped on the server's loop meanwhile): the sessions in the
    pass are out of the LRU but still hold their KV; they were left out (a server review)."""
    engine, backend, _ = _engine()
    _open(engine, "s")
    _open(engine, "other")
    _verify(engine, "s", (4,), None)
    _verify(engine, "other", (4, 5), None)
    before = engine.counters()
    assert (before.num_cached_tokens, before.num_cached_bytes) == (5, 10)
    seen = []
    backend.on_forward = lambda: seen.append(engine.counters())
    _verify(engine, "s", (6,), None)
    assert [(c.num_cached_tokens, c.num_cached_bytes) for c in seen] == [(5, 10)]


def test_hidden_rows_stop_at_the_token_budget() -> None:
    """Four accepted draft tokens, but a budget of two: only the forwarded positions that
    were committed get rows, so none runs past the committed sequence."""
    engine, _, _ = _engine()
    _open(engine, "s", prompt=(1, 2), max_new=2, hidden=True)
    out = _verify(engine, "s", (3, 4, 5, 6), None)
    assert (out.result.num_accepted, out.committed_token_ids, out.finished) == (4, (3, 4), True)
    assert out.target_hidden is not None
    np.testing.assert_array_equal(out.target_hidden, [[1, 0], [2, 1], [3, 2], [4, 3]])
    assert out.target_hidden_start + len(out.target_hidden) == 2 + len(out.committed_token_ids)


def test_counters_before_any_verification() -> None:
    engine, _, _ = _engine()
    assert engine.counters().cache_hit_ratio == 0.0
    counters = dataclasses.replace(engine.counters(), num_cache_hits=1, num_cache_misses=3)
    assert counters.cache_hit_ratio == 0.25


def test_close_session_says_whether_it_existed() -> None:
    engine, _, _ = _engine()
    _open(engine, "s")
    assert engine.close_session("s") is True
    assert engine.close_session("s") is False
    assert engine.close_session("never") is False


def test_stale_and_finished_calls_are_refused_at_verification() -> None:
    """A call validated before its session changed (or finished) gets an error from
    verify_batch, not a verdict against the wrong prefix; only live calls are counted."""
    engine, backend, _ = _engine()
    _open(engine, "s")
    _open(engine, "done", max_new=1)
    _verify(engine, "done", (), None)
    assert engine.session_finished("done")
    calls = [
        VerifyCall("s", 2, (4,)),  # the session has 1 token, not 2
        VerifyCall("done", 2, (5,)),
        VerifyCall("gone", 1, (4,)),
    ]
    before = engine.counters()
    results = engine.verify_batch(calls)
    assert [(r.code, r.message) for r in results if isinstance(r, RequestError)] == [
        (ErrorCode.FAILED_PRECONDITION, "session 's' changed before verification"),
        (ErrorCode.FAILED_PRECONDITION, "session 'done' changed before verification"),
        (ErrorCode.NOT_FOUND, "unknown session 'gone'"),
    ]
    assert engine.counters() == before
    assert len(backend.items) == 1 and engine.session_tokens("s") == (3,)
    results = engine.verify_batch([VerifyCall("s", 1, (4,)), VerifyCall("gone", 1, (4,))])
    assert isinstance(results[0], VerifyOutcome) and isinstance(results[1], RequestError)
    assert engine.counters().num_verifications == before.num_verifications + 1


def test_idle_expiry_is_strict_and_skips_busy_and_fresh_sessions() -> None:
    engine, _, clock = _engine()
    for sid in ("idle", "also_idle", "busy", "used"):
        _open(engine, sid)
    clock.now += 5.0
    _verify(engine, "used", (4,), None)  # a verification counts as use
    assert engine.expire_idle(5.0) == []  # idle for exactly the timeout: kept
    clock.now += 0.5
    assert engine.expire_idle(5.0, busy={"busy"}) == ["idle", "also_idle"]
    assert engine.counters().num_sessions == 2
    clock.now += 5.0
    assert sorted(engine.expire_idle(5.0)) == ["busy", "used"]


def test_a_session_in_flight_does_not_expire() -> None:
    engine, backend, clock = _engine()
    _open(engine, "s")
    _open(engine, "idle")
    expired: list[str] = []

    def expire_mid_forward() -> None:
        clock.now += 10.0
        expired.extend(engine.expire_idle(1.0))

    backend.on_forward = expire_mid_forward
    out = _verify(engine, "s", (4,), None)
    assert expired == ["idle"]
    assert out.committed_token_ids == (4, 5)
    assert engine.session_tokens("s") == (3, 4, 5)


def test_a_session_closed_mid_forward_keeps_no_cache() -> None:
    engine, backend, _ = _engine()
    _open(engine, "s")
    _open(engine, "other")

    def close_s() -> None:
        assert engine.close_session("s")

    backend.on_forward = close_s
    results = engine.verify_batch([VerifyCall("s", 1, (4, 5)), VerifyCall("other", 1, (4, 5))])
    assert all(isinstance(r, VerifyOutcome) for r in results)
    assert engine.counters().num_sessions == 1
    assert engine.counters().num_cached_tokens == 3  # "other" only: prompt + 2 accepted
    backend.on_forward = lambda: None
    assert _verify(engine, "other", (7,), None).committed_token_ids == (7, 8)


def test_a_failed_forward_pass_keeps_the_caches() -> None:
    engine, backend, _ = _engine()
    _open(engine, "s")
    _verify(engine, "s", (4, 5), None)
    cached = engine.counters().num_cached_tokens

    def fail() -> None:
        raise RuntimeError("device lost")

    backend.on_forward = fail
    with pytest.raises(RuntimeError, match="device lost"):
        engine.verify_batch([VerifyCall("s", 4, (7,))])
    assert engine.counters().num_cached_tokens == cached == 3
    backend.on_forward = lambda: None
    _verify(engine, "s", (7,), None)
    c = engine.counters()
    assert (c.num_cache_hits, c.num_cache_misses, backend.items[-1].kv_len) == (2, 1, 3)


def test_budget_evicts_only_past_the_limit_and_the_oldest_first() -> None:
    engine, backend, _ = _engine(kv_budget_tokens=5)
    _open(engine, "a")
    _open(engine, "b")
    _verify(engine, "a", (4, 5), None)  # a caches 3 tokens
    _verify(engine, "b", (4,), None)  # b caches 2: exactly the budget, nothing evicted
    c = engine.counters()
    assert (c.num_cached_tokens, c.num_evictions) == (5, 0)
    _verify(engine, "b", (6,), None)  # b caches 4: a, the least recently used, goes
    c = engine.counters()
    assert (c.num_cached_tokens, c.num_evictions, c.num_reprefills) == (4, 1, 0)
    out = _verify(engine, "a", (7,), None)  # a is re-prefilled from its stored tokens
    assert out.committed_token_ids == (7, 8)
    item = backend.items[-1]
    assert (item.kv, item.kv_len, item.new_token_ids) == (None, 0, (3, 4, 5, 6, 7))
    assert engine.counters().num_reprefills == 1
