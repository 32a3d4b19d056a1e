"""Fused rounds: the server runs a session's rounds itself, by its fused-rounds setting
(``edgespec serve --fused-rounds``): ``colocated``, it drafts with its co-located draft
model and verifies; ``cloud_only``, the target decodes one token per round
(:mod:`edgespec.runtime.server.cloud_only`).

Two uses, both verifying through the service's normal queue
(:class:`~edgespec.runtime.server.worker_bridge.ServiceVerifier` submits each verification
to the service on its event loop, so fused rounds batch with everyone else's), both
running their rounds on a worker thread:

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
import contextlib
import dataclasses
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import TYPE_CHECKING

from edgespec.policies.inputs import WindowHistory
from edgespec.runtime.backends.base import hidden_state_drafter
from edgespec.runtime.backends.draft_shaping import draft_shaping
from edgespec.runtime.edge.ledger import round_outcome
from edgespec.runtime.edge.rounds import PlayedRound, capped_gamma, draft_rng, play_round
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    FusedCall,
    FusedRound,
    FusedRunEnd,
)
from edgespec.runtime.server.cloud_only import play_cloud_only_round
from edgespec.runtime.server.worker_bridge import ServiceVerifier, SessionHost, from_worker

if TYPE_CHECKING:
    from edgespec.runtime.server.fused_setup import FusedStart, PairHold, ServerWindow

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
    shaping = draft_shaping(sampling, start.spec.num_prompt_tokens)
    return lambda context, gamma: play_round(
        verifier, colocated, session_id, context, gamma, sampling, rng, 0.0, clock,
        upload=upload, shaping=shaping,
    )  # fmt: skip


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
    if start.serial is not None:
        verifier.bind(call.session_id, start.serial)

    def work(emit: Callable[[FusedRound], None]) -> None:
        run_fused_rounds(verifier, call, start, window, clock, emit)

    async with contextlib.aclosing(from_worker(work, verifier, service.fused_executor)) as rounds:
        async for fused_round in rounds:
            yield fused_round
