"""A verify call sent again, identical, while its first sending is still queued or in the
batch being verified (its caller gone past its deadline: the drafter's resend,
:meth:`~edgespec.runtime.edge.round_loop.RoundLoop.verify`) takes that entry over
(:meth:`~edgespec.runtime.server.scheduler.Scheduler.take_over`): its place in the queue,
the pass running for it, a long prompt's prefill parts; nothing is forwarded twice."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Any

import numpy as np
import pytest

from edgespec.config import from_dict
from edgespec.policies.batching import FcfsBatching
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import DRAFT_HIDDEN, SessionSpec, VerifyCall, VerifyReply
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.engine_checks import same_request
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import GREEDY, PROMPT
from tests.runtime.semantic_helpers import rows
from tests.runtime.server.gated_service import GatedTarget, outcome
from tests.runtime.server.gated_service import gated_service as _service
from tests.runtime.server.semantic_engine import PROMPT as SEMANTIC_PROMPT
from tests.runtime.server.semantic_engine import open_semantic, semantic_engine
from tests.runtime.server.test_semantic_rule import _block as semantic_block

N = len(PROMPT)
LONG = tuple((7 * i + 3) % 64 for i in range(40))


def test_a_resend_is_the_same_block_and_the_same_payload_names() -> None:
    call = VerifyCall("a", 3, (1, 2), draft_s=0.5)
    hidden = {DRAFT_HIDDEN: np.zeros((2, 4), dtype=np.float32)}
    assert same_request(VerifyCall("a", 3, (1, 2), network_s=2.0), call)  # timings differ
    assert not same_request(VerifyCall("a", 3, (1, 3)), call)
    assert not same_request(VerifyCall("a", 4, (1, 2)), call)
    assert not same_request(VerifyCall("a", 3, (1, 2), draft_parents=(-1, 0)), call)
    assert not same_request(VerifyCall("a", 3, (1, 2), payloads=hidden), call)  # a follow-up


def test_a_caller_still_waiting_is_told_a_resend_took_its_call_over(
    target: TransformersTarget,
) -> None:
    call = VerifyCall("a", N, (20, 18))

    async def scenario() -> list[Any]:
        service, backend = _service(target, "a")
        await service.start()
        first = asyncio.ensure_future(outcome(service.verify(call)))
        assert await asyncio.to_thread(backend.entered.wait, 10)
        resent = asyncio.ensure_future(outcome(service.verify(call)))
        await asyncio.sleep(0.05)
        backend.gate.set()
        results = [await first, await resent, backend.passes, service.metrics().num_resent]
        await service.stop()
        return results

    first, resent, passes, resent_count = asyncio.run(scenario())
    assert resent_count == 1
    assert isinstance(first, RequestError)
    assert (first.code, first.message) == (
        ErrorCode.FAILED_PRECONDITION,
        "session 'a': a resend of this verification took it over",
    )
    assert isinstance(resent, VerifyReply)
    assert resent.outcome.committed_token_ids == target_greedy_decode(
        target, PROMPT, len(resent.outcome.committed_token_ids)
    )
    assert passes == [[N + 2]]


def test_a_resend_of_a_queued_call_keeps_its_place_and_arrival(
    target: TransformersTarget,
) -> None:
    """b's call waits behind a's pass; sent again, it is still the queue's one entry and
    its reply's queue time counts from the first sending."""
    b_call = VerifyCall("b", N, (20,))

    async def scenario() -> list[Any]:
        service, backend = _service(target, "a", "b")
        await service.start()
        a = asyncio.ensure_future(service.verify(VerifyCall("a", N, (20, 18))))
        assert await asyncio.to_thread(backend.entered.wait, 10)
        first = asyncio.ensure_future(outcome(service.verify(b_call)))
        await asyncio.sleep(0.2)
        resent = asyncio.ensure_future(outcome(service.verify(b_call)))
        await asyncio.sleep(0.05)
        depth = len(service._scheduler.queue)
        backend.gate.set()
        results = [await first, await resent, depth, await a, backend.passes]
        await service.stop()
        return results

    first, resent, depth, _, passes = asyncio.run(scenario())
    assert isinstance(first, RequestError) and first.code is ErrorCode.FAILED_PRECONDITION
    assert depth == 1
    assert isinstance(resent, VerifyReply)
    assert resent.queue_s >= 0.25  # from the first sending, 0.2 s before the resend
    assert passes == [[N + 2], [N + 1]]


def _parts_service(target: TransformersTarget) -> tuple[VerificationService, GatedTarget]:
    backend = GatedTarget(target)
    config = from_dict(ServerConfig, {"prefill_part_tokens": 8})
    engine = VerificationEngine(backend, prefill_part_tokens=8)
    service = VerificationService(engine, config, FcfsBatching())
    service.open_session(SessionSpec("long", "c", LONG, GREEDY))
    return service, backend


def test_a_long_prompts_parts_go_on_for_a_resend(target: TransformersTarget) -> None:
    """The caller of a 40-token prompt's first round goes away during its first part; the
    resend takes the part over, and then goes away between parts; a second resend goes on
    from the parts kept. Every context token is forwarded once: the passes of one
    uninterrupted call."""
    call = VerifyCall("long", 40, target_greedy_decode(target, LONG, 3))

    async def scenario() -> list[Any]:
        service, backend = _parts_service(target)
        await service.start()
        first = asyncio.ensure_future(service.verify(call))
        assert await asyncio.to_thread(backend.entered.wait, 10)
        first.cancel()
        resent = asyncio.ensure_future(service.verify(call))
        await asyncio.sleep(0.05)
        backend.entered.clear()
        backend.gate.set()  # the first part ends; the resend's call goes back to the queue
        assert await asyncio.to_thread(backend.entered.wait, 10)
        backend.gate.clear()
        backend.entered.clear()
        resent.cancel()  # gone during the second part: its outcome is kept, not queued
        await asyncio.sleep(0.05)
        backend.gate.set()
        await asyncio.sleep(0.3)
        queued_meanwhile = len(service._scheduler.queue)
        again = await outcome(service.verify(call))
        results = [queued_meanwhile, again, backend.passes, service.stats()]
        await service.stop()
        return results

    queued, again, passes, stats = asyncio.run(scenario())
    assert queued == 0  # nobody waited: the parts stopped until the resend
    assert isinstance(again, VerifyReply)
    assert again.queue_s + again.verify_s >= 0.4  # from the first sending: its arrival kept
    # much of the 0.3 s left between parts (a part's pass may overlap it: on a loaded machine
    # more than 0.1 s of it); a resend that lost the arrival would show about 0
    assert again.queue_s >= 0.1
    assert again.verify_s >= 0.05  # its first part, held 0.05 s, is verifying
    assert again.outcome.committed_token_ids == target_greedy_decode(target, LONG, 4)
    assert passes == [[8], [8], [8], [8], [7], [4]]
    assert (stats.num_cache_misses, stats.num_tokens_forwarded) == (1, 43)


async def _b_left_after_c(
    target: TransformersTarget, clients: dict[str, str], **settings: float
) -> tuple[VerificationService, GatedTarget, list[asyncio.Future[Any]], VerifyCall]:
    """One call a batch, a's pass held: b sent behind it, then c, then b's caller gone
    (``clients``: each session's client; ``settings``: more ServerConfig fields); the
    service, its gated target, a's and c's replies to come and b's call."""
    backend = GatedTarget(target)
    config = from_dict(ServerConfig, {"max_batch_size": 1, **settings})
    service = VerificationService(VerificationEngine(backend), config, FcfsBatching())
    for sid, client in clients.items():
        service.open_session(SessionSpec(sid, client, PROMPT, GREEDY))
    await service.start()
    a = asyncio.ensure_future(service.verify(VerifyCall("a", N, (20, 18))))
    assert await asyncio.to_thread(backend.entered.wait, 10)
    b_call = VerifyCall("b", N, (20,))
    first = asyncio.ensure_future(service.verify(b_call))
    await asyncio.sleep(0.1)
    c = asyncio.ensure_future(service.verify(VerifyCall("c", N, (20, 18, 3))))
    await asyncio.sleep(0.1)
    first.cancel()
    return service, backend, [a, c], b_call


def test_a_resend_after_its_caller_left_the_queue_keeps_its_arrival(
    target: TransformersTarget,
) -> None:
    """One call a batch: b is sent behind a's pass, then c; b's caller goes away and b is
    sent again after c. b keeps its first arrival, so it runs before c (it ran after c,
    its place lost), and its queue time counts from its first sending."""

    async def scenario() -> list[Any]:
        service, backend, (a, c), b_call = await _b_left_after_c(target, {s: s for s in "abc"})
        await asyncio.sleep(0.1)
        resent = asyncio.ensure_future(outcome(service.verify(b_call)))
        await asyncio.sleep(0.05)
        backend.gate.set()
        results = [await resent, await c, await a, backend.passes, service.metrics().num_resent]
        await service.stop()
        return results

    resent, _, _, passes, resent_count = asyncio.run(scenario())
    assert passes == [[N + 2], [N + 1], [N + 3]]  # a, b, c
    assert isinstance(resent, VerifyReply)
    assert resent.queue_s >= 0.3
    assert resent_count == 1  # edgespec_resent_verifications_total


def test_a_resend_refused_by_its_group_check_keeps_the_place_for_the_next(
    target: TransformersTarget,
) -> None:
    """As above, but b is first sent again announcing another count than its client's held
    group (refused, nothing queued): b's place stays for its next resend, which still runs
    before c. The refused resend took the place with it (b then ran last)."""

    async def scenario() -> list[Any]:
        clients = {"a": "a", "b": "x", "c": "c", "d": "x"}
        service, backend, (a, c), b_call = await _b_left_after_c(target, clients, group_wait_s=0.2)
        held = VerifyCall("d", N, (1, 2), batch_id="g", batch_calls=2)
        d = asyncio.ensure_future(outcome(service.verify(held)))
        await asyncio.sleep(0.05)
        grouped = dataclasses.replace(b_call, batch_id="g", batch_calls=3)
        refused = await outcome(service.verify(grouped))
        resent = asyncio.ensure_future(outcome(service.verify(b_call)))
        await asyncio.sleep(0.05)
        backend.gate.set()
        results = [refused, await resent, await c, await a, await d, backend.passes]
        await service.stop()
        return results

    refused, resent, _, _, _, passes = asyncio.run(scenario())
    assert isinstance(refused, RequestError) and refused.code is ErrorCode.INVALID_ARGUMENT
    assert passes == [[N + 2], [N + 1], [N + 3], [N + 2]]  # a, b, c, then d's group released
    assert isinstance(resent, VerifyReply) and resent.queue_s >= 0.3


def test_a_semantic_sh_first_call_sent_again_gets_its_hidden_state_request_again(
    target: TransformersTarget, target_model: Any
) -> None:
    """WISV's SH flow: the first call's reply (asking for the draft's hidden states) lost,
    the call sent again gets the same request again, from the kept pass (no second pass);
    it was refused INVALID_ARGUMENT, taken for a follow-up without its hidden states."""
    block, _ = semantic_block(target_model)
    engine = semantic_engine(target)
    service = VerificationService(engine, from_dict(ServerConfig, {}), FcfsBatching())
    open_semantic(engine, "sh")
    call = VerifyCall("sh", len(SEMANTIC_PROMPT), block)

    async def scenario() -> list[Any]:
        await service.start()
        try:
            first = await service.verify(call)
            again = await outcome(service.verify(call))
            assert first.outcome.hidden_request is not None
            with pytest.raises(RequestError) as alone:  # the engine without the service
                engine.validate(call, 16)
            assert "the follow-up call must carry payload 'draft_hidden'" in alone.value.message
            wanted = rows(-1, +1, -1, +1, -1)[list(first.outcome.hidden_request)]
            follow = dataclasses.replace(call, payloads={DRAFT_HIDDEN: wanted})
            decided = await service.verify(follow)
        finally:
            await service.stop()
        return [first, again, decided]

    first, again, decided = asyncio.run(scenario())
    assert isinstance(again, VerifyReply)
    assert again.outcome == first.outcome
    assert decided.outcome.committed_token_ids
    assert engine.counters().num_forward_passes == 1  # the follow-up decides from the pass
    assert service.metrics().num_resent == 1


def test_a_resend_while_its_committed_batch_winds_up_is_answered_by_that_batch(
    target: TransformersTarget,
) -> None:
    """The engine has committed the round and the scheduler not yet answered it (the pass's
    thread returning): a resend of the round takes the batch's entry over rather than
    being answered from the committed round at once, so the session's next call does not
    find that entry still in flight (it was refused ``FAILED_PRECONDITION: session 'a'
    already has a verification in flight``, the drafter's generation failing)."""
    call = VerifyCall("a", N, (20, 18))

    async def scenario() -> tuple[bool, Any, Any]:
        engine = VerificationEngine(target)
        committed, release, inner = threading.Event(), threading.Event(), engine.verify_batch

        def held(*args: Any) -> Any:
            outcomes = inner(*args)
            committed.set()
            assert release.wait(10)
            return outcomes

        engine.verify_batch = held  # type: ignore[method-assign,assignment]
        service = VerificationService(engine, from_dict(ServerConfig, {}), FcfsBatching())
        service.open_session(SessionSpec("a", "x", PROMPT, GREEDY))
        await service.start()
        first = asyncio.ensure_future(outcome(service.verify(call)))
        assert await asyncio.to_thread(committed.wait, 10)
        first.cancel()  # its caller gone past its deadline
        resent = asyncio.ensure_future(outcome(service.verify(call)))
        await asyncio.sleep(0.1)
        answered_before_its_batch = resent.done()
        release.set()
        reply = await resent
        assert isinstance(reply, VerifyReply)
        done = len(reply.outcome.committed_token_ids)
        following = await outcome(service.verify(VerifyCall("a", N + done, (5,))))
        await service.stop()
        return answered_before_its_batch, reply, following

    early, reply, following = asyncio.run(scenario())
    assert not early
    assert reply.batch_size == 1  # the batch's reply (a replay says 0)
    assert isinstance(following, VerifyReply)


def test_another_clients_copy_of_a_running_call_takes_nothing_over(
    target: TransformersTarget,
) -> None:
    """With auth, the same call from another token is refused before any take-over: the
    session's own caller keeps its pass and gets its reply."""
    call = VerifyCall("a", N, (20, 18))

    async def scenario() -> list[Any]:
        service, backend = _service(target)
        service.open_session(SessionSpec("a", "x", PROMPT, GREEDY), "token-a")
        await service.start()
        first = asyncio.ensure_future(outcome(service.verify(call, "token-a")))
        assert await asyncio.to_thread(backend.entered.wait, 10)
        stolen = await outcome(service.verify(call, "token-b"))
        backend.gate.set()
        results = [await first, stolen, service.metrics().num_resent]
        await service.stop()
        return results

    first, stolen, resent_count = asyncio.run(scenario())
    assert isinstance(stolen, RequestError)
    assert (stolen.code, stolen.message) == (
        ErrorCode.PERMISSION_DENIED,
        "session 'a' belongs to another client",
    )
    assert isinstance(first, VerifyReply) and resent_count == 0
