"""The edge drafter loop, shared by the gRPC client and in-process speculative decoding.

Each round: ask the window policy for γ, draft γ tokens with the draft backend, send
them to a :class:`Verifier` (the engine in-process, or a remote server), append the
committed tokens, stream them out, and record a :class:`RoundRecord`. A verifier that
lost the session (server restart, idle expiry) or became unreachable is handled by
reopening the session with every committed token as the new prompt, so the output is
identical to an uninterrupted run (greedy) — the server keeps no state the client lacks.
A :class:`~edgespec.runtime.backends.base.FeatureDraftBackend` that wants the target's
hidden states gets a session opened with ``return_hidden`` and sees every verification's
rows (``observe_target_hidden``, timed as drafting) before it drafts again.
With a stop predictor (:mod:`edgespec.policies.stop_drafting`) γ is K_max: the drafter
ends the block at the first predicted rejection (possibly an empty block, a plain target
step), and the round records the draft passes run (``RoundRecord.num_draft_passes``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from edgespec.core.types import RequestRecord, RoundRecord, SamplingParams
from edgespec.policies.contracts import check_window, policy_name
from edgespec.policies.inputs import RoundOutcome, WindowHistory
from edgespec.policies.interfaces import WindowPolicy
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.base import (
    DraftBackend,
    DraftProposal,
    FeatureDraftBackend,
    propose_block,
    stopping_drafter,
)
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply

RECOVERABLE = frozenset({ErrorCode.NOT_FOUND, ErrorCode.UNAVAILABLE})


def draft_rng(seed: int | None) -> np.random.Generator:
    """The drafter's random stream: independent of the verifier's, which is seeded with
    the same session seed (sharing one stream would correlate the draft sample with the
    acceptance test and bias the output)."""
    return np.random.default_rng(None if seed is None else [seed, 1])


class Verifier(Protocol):
    """Where draft blocks get verified (in-process engine or a remote server)."""

    def open(self, spec: SessionSpec) -> None: ...

    def verify(self, call: VerifyCall) -> VerifyReply: ...

    def close(self, session_id: str) -> None: ...


@dataclass(frozen=True, slots=True)
class GenerationResult:
    output_token_ids: tuple[int, ...]
    rounds: tuple[RoundRecord, ...]
    request: RequestRecord
    num_reconnects: int


@dataclass(frozen=True, slots=True)
class DraftOptions:
    """Per-request drafter settings."""

    session_id: str
    client_id: str = "edge-0"
    slo_class: str = "default"
    retry_timeout_s: float = 30.0
    retry_backoff_s: float = 0.05


def generate(
    verifier: Verifier,
    drafter: DraftBackend,
    prompt_ids: Sequence[int],
    sampling: SamplingParams,
    options: DraftOptions,
    window: WindowPolicy | None = None,
    on_tokens: Callable[[tuple[int, ...]], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    stop: DraftStopPolicy | None = None,
) -> GenerationResult:
    """Distributed speculative decoding of one request; returns the committed output.
    ``stop``: a stop predictor, which the drafter must support (else ``ValueError``)."""
    if stop is not None:
        stopping_drafter(drafter)  # refused before a session is opened
    policy = window if window is not None else StaticWindow(4)
    rng = draft_rng(sampling.seed)
    prompt = tuple(prompt_ids)
    output: list[int] = []
    rounds: list[RoundRecord] = []
    history = WindowHistory()
    reconnects = 0
    arrival = clock()
    first_token_s: float | None = None
    feature = (
        drafter
        if isinstance(drafter, FeatureDraftBackend) and drafter.wants_target_hidden
        else None
    )
    hidden = feature is not None
    session_id = _open(verifier, options, options.session_id, prompt, sampling, hidden)
    finished = False
    while not finished:
        obs = history.observation(clock())
        decision = check_window(policy, policy.next_window(obs))
        if decision.fused:
            raise RequestError(
                ErrorCode.FAILED_PRECONDITION,
                f"window policy {policy_name(policy)} chose a fused round; this drafter "
                "runs distributed rounds only",
            )
        chosen = decision.gamma
        # At most remaining − 1 drafts (the verifier adds one token), as the simulator
        # does: the last token is a plain target step with an empty block (nothing drafted).
        gamma = min(chosen, sampling.max_new_tokens - len(output) - 1)
        start = clock()
        context = (*prompt, *output)
        proposal = (
            propose_block(drafter, context, gamma, sampling.temperature, rng, stop)
            if gamma > 0
            else DraftProposal((), None, num_passes=None if stop is None else 0)
        )
        drafted = clock()
        call = VerifyCall(
            session_id=session_id,
            prefix_len=len(context),
            draft_token_ids=proposal.token_ids,
            draft_probs=None if sampling.greedy else proposal.probs,
            draft_parents=proposal.parents,
            draft_s=drafted - start,
            network_s=obs.rtt_s,  # the last round's uplink + downlink, 0 before the first
        )
        try:
            reply = verifier.verify(call)
        except RequestError as exc:
            if exc.code not in RECOVERABLE or clock() - drafted > options.retry_timeout_s:
                raise
            reconnects += 1
            _close_quietly(verifier, session_id)  # its KV must not wait for the timeout
            session_id = _reopen(
                verifier, options, prompt, output, sampling, clock, hidden, reconnects
            )
            continue
        end = clock()
        outcome = reply.outcome
        network_s = max(end - drafted - reply.queue_s - reply.verify_s, 0.0)
        output.extend(outcome.committed_token_ids)
        if outcome.committed_token_ids and first_token_s is None:
            first_token_s = end
        if on_tokens is not None and outcome.committed_token_ids:
            on_tokens(outcome.committed_token_ids)
        observe_s = 0.0
        if feature is not None and outcome.target_hidden is not None:
            observed = clock()
            rows = np.asarray(outcome.target_hidden, dtype=np.float32)
            feature.observe_target_hidden(outcome.target_hidden_start, rows)
            observe_s = clock() - observed
        # the window's acceptance is per position: a token tree counts its depth, not its nodes
        round_outcome = RoundOutcome(
            gamma=chosen,
            num_drafted=outcome.result.num_drafted,
            num_accepted=outcome.result.num_accepted,
            num_committed_total=len(output),
            network_s=network_s,
            queue_depth=reply.queue_depth,
        )
        history.record(round_outcome, end)
        rounds.append(
            RoundRecord(
                request_id=options.session_id,
                round_index=len(rounds),
                start_s=start,
                end_s=end,
                draft_s=drafted - start + observe_s,
                uplink_s=network_s / 2,
                queue_s=reply.queue_s,
                verify_s=reply.verify_s,
                downlink_s=network_s / 2,
                num_drafted=len(call.draft_token_ids),
                num_accepted=outcome.result.num_accepted,
                num_committed=len(outcome.committed_token_ids),
                batch_size=reply.batch_size,
                num_draft_passes=proposal.num_passes,
            )
        )
        finished = outcome.finished
    verifier.close(session_id)
    return GenerationResult(
        output_token_ids=tuple(output),
        rounds=tuple(rounds),
        request=_request_record(options, prompt, output, rounds, arrival, first_token_s),
        num_reconnects=reconnects,
    )


def _open(
    verifier: Verifier,
    options: DraftOptions,
    session_id: str,
    prompt: tuple[int, ...],
    sampling: SamplingParams,
    return_hidden: bool = False,
) -> str:
    verifier.open(
        SessionSpec(
            session_id=session_id,
            client_id=options.client_id,
            prompt_token_ids=prompt,
            sampling=sampling,
            slo_class=options.slo_class,
            return_hidden=return_hidden,
        )
    )
    return session_id


def _reopen(
    verifier: Verifier,
    options: DraftOptions,
    prompt: tuple[int, ...],
    output: list[int],
    sampling: SamplingParams,
    clock: Callable[[], float],
    return_hidden: bool = False,
    reconnect: int = 1,
) -> str:
    """Open a fresh session holding every committed token, retrying until the server is
    back. Its name ``<session>#r<reconnect>.<attempt>`` is new for every reconnect of the
    generation, even with no progress in between."""
    remaining = SamplingParams(
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        max_new_tokens=sampling.max_new_tokens - len(output),
        seed=sampling.seed,
    )
    deadline = clock() + options.retry_timeout_s
    attempt = 0
    while True:
        attempt += 1
        session_id = f"{options.session_id}#r{reconnect}.{attempt}"
        try:
            context = (*prompt, *output)
            return _open(verifier, options, session_id, context, remaining, return_hidden)
        except RequestError as exc:
            if exc.code is not ErrorCode.UNAVAILABLE or clock() > deadline:
                raise
            time.sleep(options.retry_backoff_s)


def _close_quietly(verifier: Verifier, session_id: str) -> None:
    """Close an abandoned session if the server still has it (it may be gone or down)."""
    with contextlib.suppress(RequestError):
        verifier.close(session_id)


def _request_record(
    options: DraftOptions,
    prompt: tuple[int, ...],
    output: list[int],
    rounds: list[RoundRecord],
    arrival: float,
    first_token_s: float | None,
) -> RequestRecord:
    finish = rounds[-1].end_s if rounds else arrival
    return RequestRecord(
        request_id=options.session_id,
        client_id=options.client_id,
        slo_class=options.slo_class,
        server_id=0,
        arrival_s=arrival,
        first_token_s=first_token_s if first_token_s is not None else finish,
        finish_s=finish,
        num_prompt_tokens=len(prompt),
        num_output_tokens=len(output),
        num_rounds=len(rounds),
        num_drafted=sum(r.num_drafted for r in rounds),
        num_accepted=sum(r.num_accepted for r in rounds),
        draft_s=sum(r.draft_s for r in rounds),
        network_s=sum(r.uplink_s + r.downlink_s for r in rounds),
        queue_s=sum(r.queue_s for r in rounds),
        verify_s=sum(r.verify_s for r in rounds),
    )
