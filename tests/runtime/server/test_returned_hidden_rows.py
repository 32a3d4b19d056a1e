"""A ``return_hidden`` session's reply carries the rows its client lacks: every row from 0
in its first round, then those from its newest committed token (``prefix_len - 1``) on
and the accepted draft tokens', whatever the pass forwarded. A re-prefill after an
eviction (or no prefix cache) forwards the whole context, and its reply carried the whole
context's rows, which the session kept for a retry beside its KV: past half the budget
it evicted itself every round, and re-prefilled every round. Chains, trees and the SH
follow-up of the semantic rule alike."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.base import ForwardItem
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.messages import DRAFT_HIDDEN, SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.engine_counters import EngineCounters
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.semantic_helpers import HIDDEN, draft_coordinate_head, next_token, rows
from tests.runtime.server.semantic_engine import GOOD
from tests.runtime.server.test_engine import _verify
from tests.runtime.server.test_semantic_rule import _verify as _verify_call

PROMPT = tuple((5 * j) % 64 for j in range(20))
MAX_NEW = 30
BUDGET = 60
OTHER = tuple(range(1, 56))  # another client's prompt: its KV evicts everyone else's


def _full_hidden(target: TransformersTarget, tokens: tuple[int, ...]) -> npt.NDArray[np.float32]:
    """The target's hidden rows of ``tokens``, forwarded at once from position 0."""
    hidden = target.forward([ForwardItem(None, 0, tokens, 1, want_hidden=True)])[0].hidden
    assert hidden is not None
    return hidden


def _evict_all_but_other(engine: VerificationEngine) -> None:
    engine.open_session(SessionSpec("other", "c", OTHER, SamplingParams(max_new_tokens=4)))
    _verify(engine, "other", ())
    engine.close_session("other")


def _decode(
    target: TransformersTarget, return_hidden: bool, prefix_cache: bool = True, budget: int = BUDGET
) -> tuple[list[tuple[int, VerifyOutcome]], EngineCounters, tuple[int, ...]]:
    """Session "h" decodes PROMPT in rounds of 3 drafted tokens (one wrong, two rounds in
    three); another client's long prompt evicts its KV once its context passes half the
    budget. Returns (prefix_len, outcome) per round, the engine's counters and the
    committed tokens."""
    engine = VerificationEngine(target, kv_budget_tokens=budget, prefix_cache=prefix_cache)
    sampling = SamplingParams(max_new_tokens=MAX_NEW)
    engine.open_session(SessionSpec("h", "c", PROMPT, sampling, return_hidden=return_hidden))
    reference = target_greedy_decode(target, PROMPT, MAX_NEW)
    rounds: list[tuple[int, VerifyOutcome]] = []
    evicted = False
    while not engine.session_finished("h"):
        prefix_len = len(engine.session_tokens("h"))
        if prefix_len > budget // 2 and not evicted:
            _evict_all_but_other(engine)
            evicted = True
        draft = list(reference[prefix_len - len(PROMPT) :][:3])
        if draft and len(rounds) % 3 != 2:
            draft[len(rounds) % len(draft)] = (draft[len(rounds) % len(draft)] + 1) % 64
        rounds.append((prefix_len, _verify(engine, "h", tuple(draft))))
        if return_hidden:  # a retry of the round just committed gets its reply again
            again = engine.replay(VerifyCall("h", prefix_len, tuple(draft)))
            assert again is not None and again.target_hidden is not None
    return rounds, engine.counters(), engine.session_tokens("h")


def _check_replies(
    target: TransformersTarget, rounds: list[tuple[int, VerifyOutcome]], tokens: tuple[int, ...]
) -> None:
    """The first reply's rows start at 0, every later one's at its prefix_len - 1; each
    holds its position's and its accepted draft tokens' rows, the target's over the whole
    sequence; together they cover every position but the newest."""
    full = _full_hidden(target, tokens)
    covered: list[int] = []
    for index, (prefix_len, outcome) in enumerate(rounds):
        start = 0 if index == 0 else prefix_len - 1
        accepted = min(outcome.result.num_accepted, len(outcome.committed_token_ids))
        num_rows = prefix_len - start + accepted
        assert outcome.target_hidden is not None
        got = (outcome.target_hidden_start, len(outcome.target_hidden))
        assert got == (start, num_rows), f"round {index} at prefix_len {prefix_len}"
        want = full[start : start + num_rows]
        np.testing.assert_allclose(outcome.target_hidden, want, rtol=1e-4, atol=1e-5)
        covered += range(start, start + num_rows)
    assert covered == list(range(len(covered))) and len(covered) >= len(tokens) - 1


def test_a_reprefilled_session_evicts_and_forwards_no_more_than_without_hidden_rows(
    target: TransformersTarget,
) -> None:
    """Evicted once by another client, the session re-prefills once, as a plain one does;
    it re-prefilled (and evicted itself) every round after."""
    plain_rounds, plain, plain_tokens = _decode(target, return_hidden=False)
    rounds, counters, tokens = _decode(target, return_hidden=True)
    assert tokens == plain_tokens == PROMPT + target_greedy_decode(target, PROMPT, MAX_NEW)
    assert [o.committed_token_ids for _, o in rounds] == [
        o.committed_token_ids for _, o in plain_rounds
    ]
    assert (plain.num_evictions, plain.num_reprefills) == (1, 1)
    assert (counters.num_evictions, counters.num_reprefills) == (1, 1)
    assert counters.num_tokens_forwarded == plain.num_tokens_forwarded
    forwarded = [o.num_forwarded - o.result.num_drafted for _, o in rounds]
    evicted_at = next(i for i, (p, _) in enumerate(rounds) if p > BUDGET // 2)
    assert forwarded[evicted_at] == rounds[evicted_at][0] > 30  # re-prefilled: the context
    assert forwarded[evicted_at + 1 :] == [1] * (len(rounds) - evicted_at - 1)
    _check_replies(target, rounds, tokens)


def test_without_a_prefix_cache_each_reply_carries_the_rows_its_client_lacks(
    target: TransformersTarget,
) -> None:
    """Every pass forwards the whole context; the replies are those of a cached session,
    and each is held for a retry within a budget of 40 (the whole context's rows, 50 by
    the end, went over it and were evicted: a retry was refused)."""
    rounds, _, tokens = _decode(target, return_hidden=True, prefix_cache=False, budget=40)
    assert tokens == PROMPT + target_greedy_decode(target, PROMPT, MAX_NEW)
    assert all(o.num_forwarded == p + o.result.num_drafted for p, o in rounds)
    assert max(len(o.target_hidden) for _, o in rounds[1:] if o.target_hidden is not None) <= 4
    _check_replies(target, rounds, tokens)


def test_a_tree_reply_after_a_reprefill_carries_the_newest_token_and_the_accepted_path(
    target: TransformersTarget,
) -> None:
    prompt = (1, 2, 3, 4)
    reference = target_greedy_decode(target, prompt, 8)
    engine = VerificationEngine(target, kv_budget_tokens=BUDGET)
    spec = SessionSpec("h", "c", prompt, SamplingParams(max_new_tokens=8), return_hidden=True)
    engine.open_session(spec)
    first = _verify(engine, "h", (reference[0],))
    assert first.target_hidden_start == 0 and first.committed_token_ids == reference[:2]
    _evict_all_but_other(engine)
    wrong = (reference[2] + 1) % 64
    call = VerifyCall("h", 6, (wrong, reference[2], 9, reference[3]), draft_parents=(-1, -1, 0, 1))
    engine.validate(call, 16)
    (outcome,) = engine.verify_batch([call])
    assert isinstance(outcome, VerifyOutcome) and outcome.accepted_nodes == (1, 3)
    assert outcome.num_forwarded == 6 + 4  # re-prefilled: the whole context and the tree
    assert outcome.target_hidden is not None and outcome.target_hidden_start == 5
    seq = (*prompt, *reference[:4])  # the prompt, the first round, the accepted path
    full = _full_hidden(target, seq)
    assert outcome.target_hidden.shape == (3, HIDDEN)  # positions 5, 6 and 7
    np.testing.assert_allclose(outcome.target_hidden, full[5:8], rtol=1e-4, atol=1e-5)


def _semantic_round(
    engine: VerificationEngine, target_model: Any, sid: str, upload: str
) -> tuple[VerifyOutcome, Any]:
    """One round of ``sid`` with a block mismatching everywhere: SH (its kept pass, then
    its follow-up) or FH (no kept pass)."""
    tokens = engine.session_tokens(sid)
    block = tuple((next_token(target_model, tokens) + 1 + j) % 64 for j in range(4))
    signs = rows(-1.0, +1.0, -1.0, -1.0)  # mismatch 0 accepted, mismatch 1 rejected
    if upload == "fh":
        call = VerifyCall(sid, len(tokens), block, payloads={DRAFT_HIDDEN: signs})
        return _verify_call(engine, call), None
    first = _verify_call(engine, VerifyCall(sid, len(tokens), block))
    assert first.hidden_request is not None and first.committed_token_ids == ()
    pending = engine._sessions[sid].pending
    wanted = signs[list(first.hidden_request)]
    call = VerifyCall(sid, len(tokens), block, payloads={DRAFT_HIDDEN: wanted})
    return _verify_call(engine, call), pending


def test_an_sh_pass_waiting_after_the_first_round_keeps_only_the_rows_its_reply_carries(
    target: TransformersTarget, target_model: Any
) -> None:
    """Without a prefix cache every pass forwards the whole context; the kept pass of the
    second round holds the rows of its newest committed token and the block (it held the
    whole context's), and the reply equals an FH session's, with the target's rows."""
    rules = semantic_rules(draft_coordinate_head())
    engine = VerificationEngine(target, rules=rules, prefix_cache=False)
    sampling = SamplingParams(max_new_tokens=16)
    for sid in ("sh", "fh"):
        engine.open_session(SessionSpec(sid, "c", PROMPT, sampling, return_hidden=True,
                                        verification_rule="semantic", semantic=GOOD))  # fmt: skip
    replies = []
    for _ in range(2):
        decided, pending = _semantic_round(engine, target_model, "sh", "sh")
        reference, _ = _semantic_round(engine, target_model, "fh", "fh")
        assert decided.committed_token_ids == reference.committed_token_ids
        assert decided.target_hidden is not None and reference.target_hidden is not None
        assert decided.target_hidden_start == reference.target_hidden_start
        np.testing.assert_array_equal(decided.target_hidden, reference.target_hidden)
        replies.append((pending, decided))
    (first_pending, first), (second_pending, second) = replies
    assert first_pending.out.hidden.shape == (len(PROMPT) + 4, HIDDEN)  # the first round's
    assert second_pending.out.hidden.shape == (1 + 4, HIDDEN)  # it held 20 + 2 + 4 rows
    prefix_len = len(PROMPT) + len(first.committed_token_ids)
    assert second.target_hidden is not None and second.target_hidden_start == prefix_len - 1
    assert second.target_hidden.shape == (1 + second.result.num_accepted, HIDDEN)
    full = _full_hidden(target, engine.session_tokens("sh"))
    rows_at = full[prefix_len - 1 : prefix_len - 1 + len(second.target_hidden)]
    np.testing.assert_allclose(second.target_hidden, rows_at, rtol=1e-4, atol=1e-5)
