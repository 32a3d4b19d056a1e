"""A long uncached context is prefilled one part per batch (server/prefill_parts): the
passes' exact sizes, the verdict and reply of one unsplit pass, other sessions verified in
the first part's batch, the KV budget's rules, and the scheduler answering a short
session while a long prompt's parts go on."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.batching import FcfsBatching
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import (
    DRAFT_HIDDEN,
    SessionSpec,
    VerifyCall,
    VerifyOutcome,
    VerifyReply,
)
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.prefill_parts import PrefillPart, eviction_order
from edgespec.runtime.server.round_log import RoundLog, read_round_log
from edgespec.runtime.server.semantic import semantic_rules
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.server.session_record import EngineSession
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import ServerFactory
from tests.runtime.semantic_helpers import draft_coordinate_head, rows
from tests.runtime.server.gated_service import GatedTarget
from tests.runtime.server.semantic_engine import PROMPT as SEMANTIC_PROMPT
from tests.runtime.server.semantic_engine import open_semantic, semantic_engine
from tests.runtime.server.test_semantic_rule import _block as semantic_block
from tests.runtime.server.test_server import MAX_NEW, _run_clients
from tests.runtime.wrapped_target import WrappedTarget

LONG = tuple((7 * i + 3) % 64 for i in range(40))
SHORT = (5, 9, 2, 6)
GREEDY = SamplingParams(max_new_tokens=12)


def _open(engine: VerificationEngine, sid: str, prompt: tuple[int, ...], **kw: Any) -> None:
    engine.open_session(SessionSpec(sid, "c", prompt, GREEDY, **kw))


def _passes(engine: VerificationEngine, call: VerifyCall) -> list[Any]:
    """The results of ``call``'s passes, batch after batch, up to its outcome."""
    results: list[Any] = [engine.verify_batch([call])[0]]
    while isinstance(results[-1], PrefillPart):
        results.append(engine.verify_batch([call])[0])
    return results


def test_a_long_prompt_is_prefilled_in_parts_and_verified_as_one_pass(
    target: TransformersTarget,
) -> None:
    """40 prompt tokens and 3 draft tokens at 8 tokens a batch: parts of 8, 8, 8, 8 and 7
    (the newest token stays for the last pass), then 1 + 3; the outcome is the unsplit
    pass's, and the next round is one pass."""
    reference = target_greedy_decode(target, LONG, 8)
    parted = VerificationEngine(target, prefill_part_tokens=8)
    whole = VerificationEngine(target)
    for engine in (parted, whole):
        _open(engine, "a", LONG)
    call = VerifyCall("a", 40, reference[:3])
    assert parted.pending_sizes("a", 3) == (8, 0)
    assert whole.pending_sizes("a", 3) == (43, 0)
    *parts, outcome = _passes(parted, call)
    assert parts == [
        PrefillPart(8, 8, 8),
        PrefillPart(8, 8, 16),
        PrefillPart(8, 8, 24),
        PrefillPart(8, 7, 32),
        PrefillPart(7, 4, 39),
    ]
    assert outcome == whole.verify_batch([call])[0]
    assert isinstance(outcome, VerifyOutcome)
    assert outcome.committed_token_ids == reference[:4]
    assert outcome.num_forwarded == 43
    c = parted.counters()
    assert (c.num_forward_passes, c.num_verifications, c.num_tokens_forwarded) == (6, 1, 43)
    assert (c.num_cache_hits, c.num_cache_misses, c.num_prefill_parts) == (0, 1, 5)
    follow = VerifyCall("a", 44, reference[4:7])
    assert parted.pending_sizes("a", 3) == (4, 43)
    assert _passes(parted, follow) == [whole.verify_batch([follow])[0]]


def test_other_sessions_are_verified_in_the_first_parts_batch(
    target: TransformersTarget,
) -> None:
    engine = VerificationEngine(target, prefill_part_tokens=8)
    _open(engine, "long", LONG)
    _open(engine, "short", SHORT)
    draft = target_greedy_decode(target, SHORT, 2)
    long_call, short_call = VerifyCall("long", 40, ()), VerifyCall("short", 4, draft)
    first = engine.verify_batch([long_call, short_call])
    assert first[0] == PrefillPart(8, 8, 8)
    assert isinstance(first[1], VerifyOutcome)
    assert first[1].committed_token_ids == target_greedy_decode(target, SHORT, 3)
    assert engine.session_tokens("long") == LONG  # nothing committed between parts


def test_a_return_hidden_session_gets_every_row_of_its_prompt(
    target: TransformersTarget,
) -> None:
    parted = VerificationEngine(target, prefill_part_tokens=8)
    whole = VerificationEngine(target)
    for engine in (parted, whole):
        _open(engine, "a", LONG, return_hidden=True)
    call = VerifyCall("a", 40, target_greedy_decode(target, LONG, 2))
    *parts, outcome = _passes(parted, call)
    expected = whole.verify_batch([call])[0]
    assert len(parts) == 5
    assert isinstance(outcome, VerifyOutcome) and isinstance(expected, VerifyOutcome)
    assert outcome.target_hidden is not None and expected.target_hidden is not None
    assert (
        outcome.target_hidden.shape == expected.target_hidden.shape == (42, 32)
    )  # the prompt and the 2 accepted draft tokens
    np.testing.assert_allclose(outcome.target_hidden, expected.target_hidden, atol=1e-5)
    assert outcome.target_hidden_start == expected.target_hidden_start == 0
    assert outcome.committed_token_ids == expected.committed_token_ids


def test_a_context_the_budget_cannot_hold_is_one_pass(target: TransformersTarget) -> None:
    """Parts only when the whole context (43 tokens; a return_hidden session's rows too,
    86) fits the KV budget: with 60, the plain session is split, the other is not."""
    engine = VerificationEngine(target, kv_budget_tokens=60, prefill_part_tokens=8)
    _open(engine, "plain", LONG)
    _open(engine, "rows", LONG, return_hidden=True)
    assert engine.pending_sizes("plain", 3) == (8, 0)
    assert engine.pending_sizes("rows", 3) == (43, 0)
    result = engine.verify_batch([VerifyCall("rows", 40, (1, 2, 3))])[0]
    assert isinstance(result, VerifyOutcome)


def _session(kv_len: int, in_parts: bool) -> EngineSession:
    spec = SessionSpec("x", "c", (1,), GREEDY)
    session = EngineSession(spec, None, [1], np.random.default_rng(0), 0.0, 1)  # type: ignore[arg-type]
    session.kv_len, session.prefill_start = kv_len, 0 if in_parts else None
    return session


def test_sessions_between_parts_are_evicted_last_fewest_tokens_first() -> None:
    sessions = {
        "old-parts": _session(30, True),
        "old": _session(5, False),
        "new-parts": _session(10, True),
        "new": _session(50, False),
    }
    lru = ["old-parts", "old", "new-parts", "new"]
    assert eviction_order(lru, sessions) == ["old", "new", "new-parts", "old-parts"]


def test_two_long_prompts_over_the_budget_both_finish_token_identical(
    target: TransformersTarget,
) -> None:
    """Two 40-token prompts in parts under a 60-token budget cannot both hold their KV: the
    one with fewer tokens is evicted and starts again, the other finishes; both outputs
    are the target's own."""
    engine = VerificationEngine(target, kv_budget_tokens=60, prefill_part_tokens=8)
    prompts = {"a": LONG, "b": tuple(reversed(LONG))}
    references = {sid: target_greedy_decode(target, p, 12) for sid, p in prompts.items()}
    for sid, prompt in prompts.items():
        _open(engine, sid, prompt)
    for _ in range(100):
        live = [sid for sid in prompts if not engine.session_finished(sid)]
        if not live:
            break
        calls = []
        for sid in live:
            tokens = engine.session_tokens(sid)
            done = len(tokens) - 40
            calls.append(VerifyCall(sid, len(tokens), references[sid][done : done + 3]))
        engine.verify_batch(calls)
    for sid, prompt in prompts.items():
        assert engine.session_tokens(sid)[len(prompt) :] == references[sid]
    assert engine.counters().num_evictions > 0


def test_the_scheduler_answers_a_short_round_while_a_long_prompts_parts_go_on(
    target: TransformersTarget,
) -> None:
    """A long prompt's verification and a short one's, queued together: the first batch
    holds the long prompt's first part and the whole short round, which is answered then;
    the long one's call goes back to the queue for its other parts and gets the unsplit
    pass's outcome."""
    backend = GatedTarget(target)  # records each pass's item lengths
    backend.gate.set()  # no pass waits
    config = from_dict(ServerConfig, {"prefill_part_tokens": 8})
    engine = VerificationEngine(backend, prefill_part_tokens=8)
    service = VerificationService(engine, config, FcfsBatching())
    service.open_session(SessionSpec("long", "c", LONG, GREEDY))
    service.open_session(SessionSpec("short", "d", SHORT, GREEDY))
    long_call = VerifyCall("long", 40, target_greedy_decode(target, LONG, 3))
    short_call = VerifyCall("short", 4, target_greedy_decode(target, SHORT, 2))
    answered: list[str] = []

    async def verify(call: VerifyCall) -> VerifyReply:
        reply = await asyncio.wait_for(service.verify(call), 30)
        answered.append(call.session_id)
        return reply

    async def scenario() -> tuple[VerifyReply, VerifyReply]:
        tasks = [asyncio.ensure_future(verify(c)) for c in (long_call, short_call)]
        await asyncio.sleep(0)  # both queued: one batch
        await service.start()
        try:
            long_reply, short_reply = await asyncio.gather(*tasks)
        finally:
            await service.stop()
        return long_reply, short_reply

    long_reply, short_reply = asyncio.run(scenario())
    assert backend.passes == [[8, 6], [8], [8], [8], [7], [4]]
    assert answered == ["short", "long"]
    assert short_reply.batch_size == 2
    assert long_reply.batch_size == 1
    assert long_reply.outcome.committed_token_ids == target_greedy_decode(target, LONG, 4)
    assert long_reply.outcome.num_forwarded == 43
    stats = service.stats()
    assert (stats.num_batches, stats.num_tokens_forwarded) == (6, 49)


def test_drafters_over_grpc_get_the_targets_tokens_with_long_prompts_in_parts(
    make_server: ServerFactory, target: TransformersTarget, draft_model: Any
) -> None:
    server = make_server(prefill_part_tokens=8)
    prompts = [LONG, tuple(reversed(LONG)), SHORT, LONG[:20]]
    results = _run_clients(server.port, draft_model, prompts)
    for result, prompt in zip(results, prompts, strict=True):
        assert result.output_token_ids == target_greedy_decode(target, prompt, MAX_NEW)
    service = server.service
    assert service is not None
    sizes = [record.num_new_tokens for record in service.batches]
    assert max(sizes) <= 8 * len(prompts)  # no pass forwarded a whole long prompt
    stats = RemoteVerifier(f"127.0.0.1:{server.port}").stats()
    assert stats.num_cache_misses == len(prompts)


def test_a_semantic_sh_session_in_parts_asks_and_decides_as_one_pass(
    target: TransformersTarget, target_model: Any
) -> None:
    """WISV's SH flow on a prompt in parts of 2 tokens (2, 2, then the newest token with the
    block): the same hidden-state request, then the same decision from the kept pass, the
    same returned rows for a return_hidden session; the follow-up forwards nothing."""
    block, _ = semantic_block(target_model)
    for return_hidden in (False, True):
        parted = VerificationEngine(target, rules=semantic_rules(draft_coordinate_head()),
                                    prefill_part_tokens=2)  # fmt: skip
        whole = semantic_engine(target)
        outcomes = []
        for engine in (parted, whole):
            open_semantic(engine, "sh", return_hidden=return_hidden)
            first = _passes(engine, VerifyCall("sh", len(SEMANTIC_PROMPT), block))
            assert isinstance(first[-1], VerifyOutcome) and first[-1].hidden_request is not None
            wanted = rows(-1, +1, -1, +1, -1)[list(first[-1].hidden_request)]
            follow = VerifyCall("sh", len(SEMANTIC_PROMPT), block, payloads={DRAFT_HIDDEN: wanted})
            outcomes.append((first, _passes(engine, follow)))
        (parted_first, parted_follow), (whole_first, whole_follow) = outcomes
        assert [type(p) for p in parted_first] == [PrefillPart, PrefillPart, VerifyOutcome]
        assert parted_first[-1] == whole_first[-1]
        (got,), (want,) = parted_follow, whole_follow
        assert isinstance(got, VerifyOutcome) and isinstance(want, VerifyOutcome)
        assert (got.committed_token_ids, got.accepted_mismatches) == (
            want.committed_token_ids,
            want.accepted_mismatches,
        )
        if return_hidden:
            assert got.target_hidden is not None and want.target_hidden is not None
            np.testing.assert_allclose(got.target_hidden, want.target_hidden, atol=1e-5)
        assert parted.counters().num_forward_passes == 3  # two parts, one pass for both calls


class Ticking(WrappedTarget):
    """The real target on a clock that each pass moves on by 1 s (:attr:`now`)."""

    def __init__(self, inner: TransformersTarget) -> None:
        super().__init__(inner)
        self.now = 100.0

    def forward(self, items: Any) -> Any:
        self.now += 1.0
        return self._inner.forward(items)


def test_a_long_prompts_own_parts_are_verification_time_not_queueing(
    target: TransformersTarget, tmp_path: Any
) -> None:
    """A 40-token prompt alone, in parts of 8 (five parts and its round's pass, 1 s each on
    the test's clock): its reply, the queue-wait histogram and the round log say 0 s
    queued and 6 s verified; its earlier parts were counted as queueing (5 s, 1 s)."""
    backend = Ticking(target)
    config = from_dict(ServerConfig, {"prefill_part_tokens": 8})
    engine = VerificationEngine(backend, prefill_part_tokens=8)  # type: ignore[arg-type]
    log = RoundLog(tmp_path / "rounds.jsonl")
    service = VerificationService(engine, config, FcfsBatching(), clock=lambda: backend.now,
                                  round_log=log)  # fmt: skip
    service.open_session(SessionSpec("long", "c", LONG, GREEDY))
    call = VerifyCall("long", 40, target_greedy_decode(target, LONG, 3))

    async def scenario() -> VerifyReply:
        await service.start()
        try:
            return await asyncio.wait_for(service.verify(call), 30)
        finally:
            await service.stop()

    reply = asyncio.run(scenario())
    log.close()
    assert (reply.queue_s, reply.verify_s) == (0.0, 6.0)
    assert service.stats().num_batches == 6
    (record,) = read_round_log(tmp_path / "rounds.jsonl")
    assert (record.start_s, record.queue_s, record.verify_s, record.end_s) == (
        100.0, 0.0, 6.0, 106.0,
    )  # fmt: skip
    assert service.metrics().queue_wait_seconds.sum == 0.0


def test_a_resent_call_keeps_its_earlier_parts_as_verification_time(
    target: TransformersTarget,
) -> None:
    """The caller's deadline passes after three of the parts (it leaves); its resend goes
    on from them, keeping its arrival: 0 s queued, 6 s verified, as sent once."""
    backend = Ticking(target)
    config = from_dict(ServerConfig, {"prefill_part_tokens": 8})
    engine = VerificationEngine(backend, prefill_part_tokens=8)  # type: ignore[arg-type]
    service = VerificationService(engine, config, FcfsBatching(), clock=lambda: backend.now)
    service.open_session(SessionSpec("long", "c", LONG, GREEDY))
    call = VerifyCall("long", 40, target_greedy_decode(target, LONG, 3))

    async def scenario() -> VerifyReply:
        await service.start()
        try:
            with pytest.raises(RequestError, match="before this verification's pass"):
                await asyncio.wait_for(service.verify(call, time_left_s=2.5), 30)
            return await asyncio.wait_for(service.verify(call), 30)
        finally:
            await service.stop()

    reply = asyncio.run(scenario())
    assert (reply.queue_s, reply.verify_s, service.stats().num_batches) == (0.0, 6.0, 6)
