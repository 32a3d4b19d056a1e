"""Fused rounds: the server runs a session's rounds itself, by its fused-rounds setting
(``edgespec serve --fused-rounds``): ``colocated``, it drafts with its co-located draft
model and verifies; ``cloud_only``, the target decodes one token per round
(:mod:`edgespec.runtime.server.cloud_only`).

Two uses, both verifying through the service's normal queue (:class:`ServiceVerifier`
submits each verification to the service on its event loop, so fused rounds batch with
everyone else's), both running their rounds on a worker thread:

- **fused runs** (:func:`run_fused_rounds`, the ``RunFused`` RPC): a device whose window
  policy answered fused hands its open session over with its window history
  (:class:`~edgespec.runtime.messages.FusedCall`). The server runs fused rounds back to
  back — the pieces of a round are the drafter's own (:mod:`edgespec.runtime.edge.rounds`) —
  records each in the restored history with ``fused=True``, consults its window policy
  after each verdict, and streams each round as a
  :class:`~edgespec.runtime.messages.FusedRound` when its verdict is in. A distributed
  answer, or the request's end, ends the run: the last round carries the decision and
  the history back. A server without a window policy runs one fused round per request
  and hands the decision back to the device's policy.
- **the whole-request fused baseline** (``Generate`` with ``MODE_FUSED``):
  :mod:`edgespec.runtime.server.fused_baseline`, on this module's worker bridge.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
from collections.abc import AsyncGenerator, Callable, Coroutine, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from edgespec.policies.inputs import WindowHistory
from edgespec.runtime.backends.base import hidden_state_drafter
from edgespec.runtime.edge.rounds import (
    PlayedRound,
    capped_gamma,
    draft_rng,
    play_round,
    round_outcome,
)
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    FusedCall,
    FusedRound,
    FusedRunEnd,
    SessionSpec,
    VerifyCall,
    VerifyReply,
)
from edgespec.runtime.server.cloud_only import play_cloud_only_round

if TYPE_CHECKING:
    from edgespec.runtime.server.fused_setup import FusedStart, PairHold, ServerWindow

Chunk = tuple[tuple[int, ...], bool]
WAIT_SLICE_S = 0.25
"""How often a worker waiting on the event loop looks whether it should stop waiting."""
_T = TypeVar("_T")


class SessionHost(Protocol):
    """What a fused run needs of the verification service
    (:class:`~edgespec.runtime.server.service.VerificationService`): open a session, verify
    its rounds, close it, each for an owner (the caller's identity when auth is on); and the
    executor its worker thread runs on."""

    @property
    def fused_executor(self) -> Executor: ...

    def open_session(self, spec: SessionSpec, owner: str | None = None) -> None: ...

    async def verify(self, call: VerifyCall, owner: str | None = None) -> VerifyReply: ...

    def close_session(self, session_id: str, owner: str | None = None) -> bool: ...


class ServiceVerifier:
    """A :class:`~edgespec.runtime.edge.drafter.Verifier` for a worker thread: every call runs
    on the service's event loop, for ``owner``. Once ``cancelled`` is set (the client went
    away), or the loop stops (the server is stopping), a call waiting on the loop and every
    later call fail with ``CANCELLED``: the worker ends rather than wait for a loop that
    will never answer (a process could not exit past it). ``opened`` holds the sessions its
    own ``open`` opened (the ones its caller may close on its behalf)."""

    def __init__(
        self,
        service: SessionHost,
        loop: asyncio.AbstractEventLoop,
        owner: str | None = None,
    ) -> None:
        self._service = service
        self._loop = loop
        self.owner = owner
        self.cancelled = False
        self.opened: set[str] = set()

    def _wait(self, make: Callable[[], Coroutine[Any, Any, _T]], cleanup: bool = False) -> _T:
        """``make()``'s coroutine run on the loop, its result waited for in slices; a
        ``cleanup`` call (a close) still runs once the verifier is cancelled."""
        self._check(cleanup)
        future = asyncio.run_coroutine_threadsafe(make(), self._loop)
        while True:
            try:
                return future.result(timeout=WAIT_SLICE_S)
            except concurrent.futures.TimeoutError:
                try:
                    self._check(cleanup)
                except RequestError:
                    future.cancel()
                    raise

    def _check(self, cleanup: bool) -> None:
        if self.cancelled and not cleanup:
            raise RequestError(ErrorCode.CANCELLED, "the fused-mode client went away")
        if not self._loop.is_running():
            raise RequestError(ErrorCode.CANCELLED, "the server stopped")

    def _on_loop(self, fn: Callable[[], _T], cleanup: bool = False) -> _T:
        async def call() -> _T:
            return fn()

        return self._wait(call, cleanup)

    def open(self, spec: SessionSpec) -> None:
        self._on_loop(lambda: self._service.open_session(spec, self.owner))
        self.opened.add(spec.session_id)

    def verify(self, call: VerifyCall) -> VerifyReply:
        """Verify on the service; the drafter's own draft time stands, its network time
        (thread hops only) is reported as 0: the server drafts for itself."""
        local = dataclasses.replace(call, network_s=0.0)
        return self._wait(lambda: self._service.verify(local, self.owner))

    def close(self, session_id: str) -> None:
        self._on_loop(lambda: self._service.close_session(session_id, self.owner), cleanup=True)
        self.opened.discard(session_id)


async def from_worker(
    work: Callable[[Callable[[_T], None]], None],
    verifier: ServiceVerifier,
    executor: Executor | None = None,
) -> AsyncGenerator[_T, None]:
    """Run ``work(emit)`` on a thread of ``executor`` (the service's fused runs' own, so
    that they do not wait for threads of the event loop's small default pool, where one
    client's long runs held every thread from the others'; ``None``: that default pool) and
    yield what it emits, in order; its exception is raised here. When the caller stops
    early, the verifier is cancelled (the worker's next verification fails) and the worker
    is waited for."""
    loop = asyncio.get_running_loop()
    items: asyncio.Queue[tuple[_T] | BaseException | None] = asyncio.Queue()

    def push(item: tuple[_T] | BaseException | None) -> None:
        loop.call_soon_threadsafe(items.put_nowait, item)

    def run() -> None:
        try:
            work(lambda x: push((x,)))
            push(None)
        except BaseException as exc:  # surfaced to the caller below
            push(exc)

    worker = loop.run_in_executor(executor, run)
    try:
        while (item := await items.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item[0]
    finally:
        verifier.cancelled = True
        await asyncio.shield(worker)


RoundPlayer = Callable[[Sequence[int], int], PlayedRound]
"""Plays a fused round of a γ (already capped) after a context."""


def _round_player(
    verifier: ServiceVerifier, call: FusedCall, start: FusedStart, clock: Callable[[], float]
) -> RoundPlayer:
    """How ``start``'s run plays its rounds: cloud-only (its γ unused), or drafted by the
    co-located draft and verified. The draft's random stream is the session seed's stream
    for the run's starting prefix, new for every run (it may not repeat a draw)."""
    sampling, session_id, drafter = start.spec.sampling, call.session_id, start.drafter
    rng = draft_rng(sampling.seed, 2, call.prefix_len)
    if start.cloud_only:
        return lambda context, _: play_cloud_only_round(
            verifier, drafter, session_id, context, sampling, rng, clock
        )
    if drafter is None:
        raise RequestError(ErrorCode.INTERNAL, "a co-located fused run started without a draft")
    colocated = drafter
    # A lossy (semantic) session's rounds carry the co-located draft's hidden states, FH
    # style: they cost no network here (fused_setup checked the draft returns them).
    upload = None if start.spec.verification_rule == "exact" else "fh"
    if upload is not None:
        hidden_state_drafter(colocated).return_hidden(True)  # a fresh draft for this run
    return lambda context, gamma: play_round(
        verifier, colocated, session_id, context, gamma, sampling, rng, 0.0, clock, upload=upload
    )


def run_fused_rounds(
    verifier: ServiceVerifier,
    call: FusedCall,
    start: FusedStart,
    window: ServerWindow | None,
    clock: Callable[[], float],
    emit: Callable[[FusedRound], None],
) -> None:
    """The server's loop of one fused run (on a worker thread): ``call.history`` restored
    (the window policy's pair state too, under ``start.pair``), fused rounds of the decided
    γ until ``window`` answers distributed or the request finishes (one round when
    ``window`` is ``None``), each emitted when verified; the last carries the history and
    the pair state back.

    ``start.spec``: the session's (its prompt and budget count its output);
    ``start.tokens``: its committed tokens now (prompt and output). Each round is recorded
    in the history as fused with its decision's γ (a cloud-only round: 0 drafted, 0
    accepted, the one token committed). A round whose tokens are committed is emitted even
    when what follows its verdict fails (the window policy, say): the device has them
    before the error, and its session goes on from there."""
    pair = start.spec.client_id if start.pair is None else start.pair
    history = WindowHistory.from_snapshot(call.history, clock(), pair)
    if window is None:
        _play_rounds(verifier, call, start, None, history, clock, emit)
        return
    hold = window.hold(pair, call.history.window_state)
    try:
        _play_rounds(verifier, call, start, hold, history, clock, emit)
    finally:
        hold.close()


def _play_rounds(
    verifier: ServiceVerifier,
    call: FusedCall,
    start: FusedStart,
    window: PairHold | None,
    history: WindowHistory,
    clock: Callable[[], float],
    emit: Callable[[FusedRound], None],
) -> None:
    """:func:`run_fused_rounds`'s rounds, ``window``: the run's hold on the server's window."""
    spec = start.spec
    play = _round_player(verifier, call, start, clock)
    context = list(start.tokens)
    num_output = len(context) - len(spec.prompt_token_ids)
    committed_total = call.history.num_committed_total
    gamma = call.gamma
    while True:
        played = play(context, capped_gamma(gamma, spec.sampling.max_new_tokens, num_output))
        reply = played.reply
        committed = reply.outcome.committed_token_ids
        context.extend(committed)
        num_output += len(committed)
        committed_total += len(committed)
        fused_round = FusedRound(gamma, played.call.draft_token_ids, played.draft_s, reply)
        try:
            history.record(round_outcome(gamma, reply, committed_total, 0.0, True), played.end_s)
            finished = reply.outcome.finished
            decision = None if finished or window is None else window.decide(history, played.end_s)
            end = None
            if decision is None or not decision.fused:
                # without a server policy the device's state goes back as it came
                state = call.history.window_state if window is None else window.hand_back()
                end = FusedRunEnd(decision, history.snapshot(clock(), state))
        except BaseException:
            emit(fused_round)  # committed: the device records it before the error
            raise
        if end is not None:
            emit(dataclasses.replace(fused_round, end=end))
            return
        emit(fused_round)
        assert decision is not None  # fused: the run goes on
        gamma = decision.gamma


async def stream_fused_run(
    service: SessionHost,
    call: FusedCall,
    start: FusedStart,
    window: ServerWindow | None,
    clock: Callable[[], float],
    owner: str | None = None,
) -> AsyncGenerator[FusedRound, None]:
    """:func:`run_fused_rounds` on a worker thread, its rounds streamed as they end."""
    verifier = ServiceVerifier(service, asyncio.get_running_loop(), owner)

    def work(emit: Callable[[FusedRound], None]) -> None:
        run_fused_rounds(verifier, call, start, window, clock, emit)

    async with contextlib.aclosing(from_worker(work, verifier, service.fused_executor)) as rounds:
        async for fused_round in rounds:
            yield fused_round
