"""One fused run per session: another RunFused on a session whose fused run is in progress
is refused at once (before it drafts anything), and the session is free again however the
run ends (finished, failed, cancelled)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from edgespec.config import from_dict
from edgespec.core.types import SamplingParams
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.runtime.backends.base import DraftProposal
from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, FusedRound, SessionSpec
from edgespec.runtime.server.batching import build_batching
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.conftest import start_server

PROMPT = (5, 6, 7, 8, 9)
GREEDY = SamplingParams(max_new_tokens=16)
IN_PROGRESS = "session 's': a fused run is already in progress on it; one fused run per session"
WAIT_S = 60.0


class _Book:
    """The drafts a server made and their passes; the first pass waits for ``gate``
    (``entered`` is set once it is waiting), or raises when ``fail_first``."""

    def __init__(self, model: Any, fail_first: bool = False) -> None:
        self.model = model
        self.fail_first = fail_first
        self.lock = threading.Lock()
        self.num_drafts = 0
        self.num_passes = 0
        self.entered = threading.Event()
        self.gate = threading.Event()

    def factory(self) -> TransformersDraft:
        with self.lock:
            self.num_drafts += 1
        return _GatedDraft(self)

    def counts(self) -> tuple[int, int]:
        with self.lock:
            return self.num_drafts, self.num_passes


class _GatedDraft(TransformersDraft):
    def __init__(self, book: _Book) -> None:
        super().__init__(book.model)
        self._book = book

    def propose(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        book = self._book
        with book.lock:
            book.num_passes += 1
            first = book.num_passes == 1
        if first and book.fail_first:
            raise RuntimeError("draft pass broke")
        if first:
            book.entered.set()
            assert book.gate.wait(WAIT_S), "the test never opened the gate"
        return super().propose(context, gamma, temperature, rng, shaping)


def _fused(session_id: str, prefix_len: int = len(PROMPT)) -> FusedCall:
    return FusedCall(session_id, prefix_len, 3, HistorySnapshot())


def _one_round(
    verifier: RemoteVerifier, session_id: str, prefix_len: int = len(PROMPT)
) -> FusedRound:
    """The one round of a fused run on a server without a window policy."""
    (only,) = list(verifier.run_fused(_fused(session_id, prefix_len)))
    assert only.end is not None
    return only


@contextlib.contextmanager
def held_run(
    target: TransformersTarget, draft_model: Any
) -> Iterator[tuple[_Book, RemoteVerifier, Callable[[], FusedRound | BaseException]]]:
    """A server without a window policy (one round per run) whose session 's' has a fused
    run drafting its first round, held at the draft's gate: (the book, a verifier of the
    server, ``finish``: open the gate and take the run's round or error)."""
    book = _Book(draft_model)
    server = start_server(target, book.factory)
    address = f"127.0.0.1:{server.port}"
    ran: list[FusedRound | BaseException] = []

    def run() -> None:
        try:
            ran.append(_one_round(RemoteVerifier(address), "s"))
        except BaseException as exc:  # surfaced by the caller's assertions
            ran.append(exc)

    def finish() -> FusedRound | BaseException:
        book.gate.set()
        thread.join(WAIT_S)
        (result,) = ran
        return result

    thread = threading.Thread(target=run, daemon=True)
    try:
        verifier = RemoteVerifier(address)
        verifier.open(SessionSpec("s", "x", PROMPT, GREEDY))
        thread.start()
        assert book.entered.wait(WAIT_S), "the run never drafted"
        yield book, verifier, finish
    finally:
        book.gate.set()
        if thread.is_alive():
            thread.join(WAIT_S)
        server.stop(grace_s=0)


def _same_round(a: FusedRound, b: FusedRound) -> None:
    assert a.draft_token_ids == b.draft_token_ids
    (x, y) = (a.reply.outcome, b.reply.outcome)
    assert (x.result, x.committed_token_ids, x.finished) == (
        y.result,
        y.committed_token_ids,
        y.finished,
    )


def test_a_second_fused_run_on_a_session_is_refused_before_it_drafts(
    target: TransformersTarget, draft_model: Any
) -> None:
    with held_run(target, draft_model) as (book, verifier, finish):
        verifier.open(SessionSpec("ref", "x", PROMPT, GREEDY))
        with pytest.raises(RequestError) as info:
            list(verifier.run_fused(_fused("s")))
        assert (info.value.code, info.value.message) == (
            ErrorCode.FAILED_PRECONDITION,
            IN_PROGRESS,
        )
        assert book.counts() == (1, 1)  # the refused run made no draft and ran no pass
        ran = finish()
        assert isinstance(ran, FusedRound), ran
        reference = _one_round(verifier, "ref")  # the same run, without the intruder
        _same_round(ran, reference)
        # the session is free again: the next run goes on from the first run's tokens
        prefix = len(PROMPT) + len(ran.reply.outcome.committed_token_ids)
        _same_round(_one_round(verifier, "s", prefix), _one_round(verifier, "ref", prefix))


def test_a_fused_run_that_fails_frees_its_session(
    target: TransformersTarget, draft_model: Any
) -> None:
    book = _Book(draft_model, fail_first=True)
    server = start_server(target, book.factory)
    try:
        verifier = RemoteVerifier(f"127.0.0.1:{server.port}")
        verifier.open(SessionSpec("s", "x", PROMPT, GREEDY))
        with pytest.raises(RequestError) as info:
            list(verifier.run_fused(_fused("s")))
        assert (info.value.code, info.value.message) == (
            ErrorCode.INTERNAL,
            "RunFused failed on the server: RuntimeError('draft pass broke')",
        )
        # a run refused by its checks holds nothing either
        with pytest.raises(RequestError) as info:
            list(verifier.run_fused(_fused("s", len(PROMPT) + 1)))
        assert (info.value.code, info.value.message) == (
            ErrorCode.INVALID_ARGUMENT,
            "prefix_len 6 does not match session 's', which has 5 committed tokens",
        )
        only = _one_round(verifier, "s")  # not refused as "in progress"
        assert only.reply.outcome.committed_token_ids
        assert book.counts() == (2, 2)
    finally:
        server.stop(grace_s=0)


def _service(
    target: TransformersTarget, factory: Callable[[], TransformersDraft]
) -> VerificationService:
    config = from_dict(ServerConfig, {"port": 0})
    engine = VerificationEngine(target, config.kv_budget_tokens, config.max_sessions)
    return VerificationService(
        engine, config, build_batching(config.batching), draft_factory=factory
    )


def test_a_cancelled_fused_run_frees_its_session_once_its_worker_stopped(
    target: TransformersTarget, draft_model: Any
) -> None:
    """In process: the run's consumer is cancelled while its draft pass is under way; once
    the cancellation is through (the worker stopped), another run on the session runs."""
    book = _Book(draft_model)

    async def scenario() -> FusedRound:
        service = _service(target, book.factory)
        await service.start()
        try:
            service.open_session(SessionSpec("s", "x", PROMPT, GREEDY))
            rounds = service.run_fused(_fused("s"))
            pending = asyncio.ensure_future(rounds.__anext__())
            loop = asyncio.get_running_loop()
            assert await loop.run_in_executor(None, book.entered.wait, WAIT_S)
            with pytest.raises(RequestError) as info:
                [r async for r in service.run_fused(_fused("s"))]
            assert info.value.message == IN_PROGRESS
            pending.cancel()
            # one loop turn: the cancellation reaches the run (its verifier is cancelled)
            # before the draft pass may finish; set at once, the gate let the worker's
            # verification reach the loop first now and then, and the round committed
            await asyncio.sleep(0)
            book.gate.set()
            with pytest.raises(asyncio.CancelledError):
                await pending
            (only,) = [r async for r in service.run_fused(_fused("s"))]
            return only
        finally:
            book.gate.set()
            await service.stop()

    only = asyncio.run(scenario())
    assert only.end is not None and only.reply.outcome.committed_token_ids
    assert book.counts() == (2, 2)  # the cancelled run's pass and the next run's
