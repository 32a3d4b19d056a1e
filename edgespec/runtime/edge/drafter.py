"""The edge drafter loop, shared by the gRPC client and in-process speculative decoding.

Each round: ask the window policy for a decision (γ, mode). Distributed: draft γ tokens
with the draft backend, send them to a :class:`Verifier` (the engine in-process, or a
remote server), append the committed tokens, stream them out, and record a
:class:`RoundRecord`. Fused (a server with a co-located draft, :class:`FusedVerifier`):
hand the session to the server for a run of fused rounds, record each as it arrives and
continue with the decision the server obtained (:mod:`edgespec.runtime.edge.fused_handover`).
The pieces of a round are shared with the server's fused loop
(:mod:`edgespec.runtime.edge.rounds`).

The rounds themselves run in :class:`~edgespec.runtime.edge.round_loop.RoundLoop`. A
verifier that lost the session (server restart, idle expiry) or became unreachable
(:data:`~edgespec.runtime.edge.round_loop.RECOVERABLE`) is handled by reopening the session
with every committed token as the new prompt (:mod:`edgespec.runtime.edge.reconnect`), so
the output is identical to an uninterrupted run (greedy); a round the server aborted
(``ABORTED``) is played again on the same session. A
:class:`~edgespec.runtime.backends.base.FeatureDraftBackend` that wants the target's hidden
states gets a session opened with ``return_hidden`` and sees every verification's rows
(``observe_target_hidden``, timed as drafting) before it drafts again.
With a stop predictor (:mod:`edgespec.policies.stop_drafting`) γ is K_max: the drafter
ends the block at the first predicted rejection (possibly an empty block, a plain target
step), and the round records the draft passes run (``RoundRecord.num_draft_passes``).

With a :class:`~edgespec.runtime.edge.semantic.SemanticRequest` the session is opened for
the lossy ``"semantic"`` rule: the drafter returns its hidden states with every block, the
session opening's round trip (the handshake) picks the FH or SH upload when it is
``auto``, and the result carries a :class:`~edgespec.runtime.edge.semantic.SemanticReport`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.core.types import RequestRecord, RoundRecord, SamplingParams
from edgespec.policies.interfaces import WindowPolicy
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.base import (
    DraftBackend,
    FeatureDraftBackend,
    hidden_state_drafter,
    stopping_drafter,
)
from edgespec.runtime.edge.bounded_calls import open_bounded
from edgespec.runtime.edge.ledger import Ledger
from edgespec.runtime.edge.progress import ProgressBudget
from edgespec.runtime.edge.reconnect import (
    RETRY_BACKOFF_S,
    close_if_opened,
    close_quietly,
    open_retrying,
)
from edgespec.runtime.edge.round_loop import RECOVERABLE, RoundLoop
from edgespec.runtime.edge.rounds import Verifier
from edgespec.runtime.edge.semantic import (
    SEMANTIC,
    SemanticReport,
    SemanticRequest,
    choose_upload,
)
from edgespec.runtime.errors import RequestError
from edgespec.runtime.messages import SemanticSpec, SessionSpec


@dataclass(frozen=True, slots=True)
class GenerationResult:
    output_token_ids: tuple[int, ...]
    rounds: tuple[RoundRecord, ...]
    request: RequestRecord
    num_reconnects: int
    semantic: SemanticReport | None = None
    """A semantic (lossy) run's report; ``None`` for exact verification."""
    num_replays: int = 0
    """Rounds played again on the same session after the server aborted them (``ABORTED``:
    a semantic follow-up's hidden rows evicted, nothing committed)."""
    num_resends: int = 0
    """Verify calls sent again, identical, on the same session after they outlived their
    deadline (the server took each resend over, :meth:`RoundLoop.verify`)."""


@dataclass(frozen=True, slots=True)
class DraftOptions:
    """Per-request drafter settings. A lost session is reopened for up to
    ``retry_timeout_s``; the first open is retried alike while the server is unreachable
    for up to ``first_open_retry_s`` (what routing left of the request's retry budget,
    :func:`~edgespec.runtime.edge.routing.route_retrying`; 0: it is tried once and fails at
    once, as ``edgespec draft`` against its one server).
    ``progress``: how many reconnects in a row, and how long, without a committed token
    before the generation gives up (:mod:`edgespec.runtime.edge.progress`). ``cancel``:
    set, it ends the retries, and an open the server has not answered, within one
    ``retry_backoff_s`` with :class:`~edgespec.runtime.edge.reconnect.Cancelled` (its caller
    gone); ``None``: they run their course. ``on_reconnect``: told as a lost session is
    reopened, with the error that lost it, the tokens committed so far and the seconds
    the reopening is retried for (``edgespec draft`` says it on stderr); ``on_resend``:
    told as a verify call past its deadline is sent again on the same session, with its
    error, the tokens committed so far and the seconds left of the progress budget.
    ``on_logprobs``: a round's committed tokens' log-probabilities, just before its tokens
    (a session whose sampling asks for them); ``on_prompt_logprobs``: the prompt's, before
    the first round's (``SamplingParams.prompt_logprobs``)."""

    session_id: str
    client_id: str = "edge-0"
    slo_class: str = "default"
    retry_timeout_s: float = 30.0
    retry_backoff_s: float = RETRY_BACKOFF_S
    first_open_retry_s: float = 0.0
    progress: ProgressBudget = field(default_factory=ProgressBudget)
    cancel: threading.Event | None = None
    on_reconnect: Callable[[RequestError, int, float], None] | None = None
    on_resend: Callable[[RequestError, int, float], None] | None = None
    on_logprobs: Callable[[tuple[TokenLogprobs, ...]], None] | None = None
    on_prompt_logprobs: Callable[[tuple[TokenLogprobs, ...]], None] | None = None


def generate(
    verifier: Verifier,
    drafter: DraftBackend,
    prompt_ids: Sequence[int],
    sampling: SamplingParams,
    options: DraftOptions,
    window: WindowPolicy | None = None,
    on_tokens: Callable[[tuple[int, ...]], bool | None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    stop: DraftStopPolicy | None = None,
    semantic: SemanticRequest | None = None,
) -> GenerationResult:
    """Distributed speculative decoding of one request; returns the committed output.
    ``on_tokens``: each round's committed tokens as they arrive; it returns ``True`` to end
    the generation there (the session closed as at its end: a stop sequence found).
    ``stop``: a stop predictor, which the drafter must support (else ``ValueError``).
    A fused decision needs a :class:`FusedVerifier` (else ``FAILED_PRECONDITION``).
    ``semantic``: verify with the server's lossy semantic rule (greedy chain drafters
    that return hidden states only, else ``ValueError``)."""
    if stop is not None:
        stopping_drafter(drafter)  # refused before a session is opened
    if semantic is None:
        return _generate(verifier, drafter, prompt_ids, sampling, options, window, on_tokens,
                         clock, stop)  # fmt: skip
    if not sampling.greedy:
        raise ValueError(
            f"semantic verification is greedy only, got temperature {sampling.temperature}"
        )
    hidden = hidden_state_drafter(drafter)
    width = hidden.return_hidden(True)  # said when the session opens
    try:
        return _generate(verifier, drafter, prompt_ids, sampling, options, window, on_tokens,
                         clock, stop, semantic, width)  # fmt: skip
    finally:
        hidden.return_hidden(False)


def _generate(
    verifier: Verifier,
    drafter: DraftBackend,
    prompt_ids: Sequence[int],
    sampling: SamplingParams,
    options: DraftOptions,
    window: WindowPolicy | None,
    on_tokens: Callable[[tuple[int, ...]], bool | None] | None,
    clock: Callable[[], float],
    stop: DraftStopPolicy | None,
    semantic: SemanticRequest | None = None,
    draft_width: int = 0,
) -> GenerationResult:
    prompt = tuple(prompt_ids)
    arrival = clock()
    feature = (
        drafter
        if isinstance(drafter, FeatureDraftBackend) and drafter.wants_target_hidden
        else None
    )
    # the pair is named by the client id, as the server names it (WindowObservation.pair)
    ledger = Ledger(options.session_id, on_tokens, feature, clock, options.client_id,
                    options.on_logprobs, options.on_prompt_logprobs)  # fmt: skip
    wisv = None if semantic is None else semantic.spec(draft_width)
    opened = clock()
    first = _session_spec(options, prompt, sampling, feature is not None, wisv)
    _open(verifier, first, options, clock)
    handshake_rtt_s = clock() - opened
    upload = None if semantic is None else choose_upload(semantic.upload, handshake_rtt_s)
    loop = RoundLoop(verifier, drafter, prompt, sampling, options, clock, ledger, first)
    try:
        loop.run(window if window is not None else StaticWindow(4), stop, upload)
    except RequestError:
        raise  # the loop closed what the server still holds (RoundLoop._recover)
    except BaseException:  # a local failure or an interrupt: free the server's KV now
        close_quietly(verifier, loop.session_id)
        raise
    try:
        verifier.close(loop.session_id)
    except RequestError as exc:  # the output is complete; a server gone took the session along
        if exc.code not in RECOVERABLE:
            raise
    report = None
    if semantic is not None and upload is not None:
        report = SemanticReport(semantic.threshold, upload, handshake_rtt_s,
                                tuple(loop.exchanges), tuple(loop.mismatches))  # fmt: skip
    return GenerationResult(
        output_token_ids=tuple(ledger.output),
        rounds=tuple(ledger.rounds),
        request=_request_record(options, prompt, ledger, arrival),
        num_reconnects=loop.reconnects,
        semantic=report,
        num_replays=loop.replays,
        num_resends=loop.resends,
    )


def _open(
    verifier: Verifier, first: SessionSpec, options: DraftOptions, clock: Callable[[], float]
) -> None:
    """Open the generation's session, retrying while the server is unreachable for up to
    ``options.first_open_retry_s`` (0: no retry; the open waits the verifier's own timeout),
    cut short by ``options.cancel`` either way. An open whose outcome is unknown (its
    answer lost or timed out: it may still have opened the session on the server) is closed
    again before it is raised; one the server refused is not (the id may be another
    client's open session)."""
    try:
        if options.first_open_retry_s > 0:
            open_retrying(verifier, first, clock, options.first_open_retry_s,
                          options.retry_backoff_s, options.cancel)  # fmt: skip
        else:
            open_bounded(verifier, first, math.inf, options.cancel)
    except RequestError as exc:
        close_if_opened(verifier, first.session_id, exc)
        raise


def _session_spec(
    options: DraftOptions,
    prompt: tuple[int, ...],
    sampling: SamplingParams,
    return_hidden: bool,
    semantic: SemanticSpec | None,
) -> SessionSpec:
    """The session a generation opens (a reconnect reopens it under a new name)."""
    return SessionSpec(
        session_id=options.session_id,
        client_id=options.client_id,
        prompt_token_ids=prompt,
        sampling=sampling,
        slo_class=options.slo_class,
        return_hidden=return_hidden,
        verification_rule="exact" if semantic is None else SEMANTIC,
        semantic=semantic,
    )


def _request_record(
    options: DraftOptions, prompt: tuple[int, ...], ledger: Ledger, arrival: float
) -> RequestRecord:
    rounds = ledger.rounds
    finish = rounds[-1].end_s if rounds else arrival
    first_token_s = ledger.first_token_s
    return RequestRecord(
        request_id=options.session_id,
        client_id=options.client_id,
        slo_class=options.slo_class,
        server_id=0,
        arrival_s=arrival,
        first_token_s=first_token_s if first_token_s is not None else finish,
        finish_s=finish,
        num_prompt_tokens=len(prompt),
        num_output_tokens=len(ledger.output),
        num_rounds=len(rounds),
        num_drafted=sum(r.num_drafted for r in rounds),
        num_accepted=sum(r.num_accepted for r in rounds),
        draft_s=sum(r.draft_s for r in rounds),
        network_s=sum(r.uplink_s + r.downlink_s for r in rounds),
        queue_s=sum(r.queue_s for r in rounds),
        verify_s=sum(r.verify_s for r in rounds),
    )
