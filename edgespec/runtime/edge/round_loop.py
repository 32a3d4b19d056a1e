"""The rounds of one edge generation (:func:`edgespec.runtime.edge.drafter.generate`)
after its session is open: each decided by the window policy, then played distributed
(:func:`~edgespec.runtime.edge.rounds.play_round`) or handed to the server fused
(:mod:`edgespec.runtime.edge.fused_handover`), and committed to the
:class:`~edgespec.runtime.edge.rounds.Ledger`. A verification past its deadline is sent
again, identical, on the same session (:meth:`RoundLoop.verify`: the server takes the
resend over, with the pass or prefill parts it runs for it); a session lost to a
:data:`RECOVERABLE` error is reopened with every committed token as its prompt
(:mod:`edgespec.runtime.edge.reconnect`); a round the server aborted (:data:`REPLAYED`)
is played again on the same session. All count against the progress budget (resends its
time alone)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from edgespec.core.semantic_link import Upload
from edgespec.core.types import SamplingParams
from edgespec.policies.interfaces import WindowDecision, WindowPolicy
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.runtime.backends.base import DraftBackend
from edgespec.runtime.backends.draft_shaping import draft_shaping
from edgespec.runtime.edge.bounded_calls import verify_bounded
from edgespec.runtime.edge.fused_handover import fused_handover
from edgespec.runtime.edge.ledger import Ledger
from edgespec.runtime.edge.progress import NoProgress, ProgressBudget, ProgressWatch
from edgespec.runtime.edge.reconnect import Cancelled, close_quietly, reopen
from edgespec.runtime.edge.rounds import (
    PlayedRound,
    Verifier,
    capped_gamma,
    decide,
    draft_rng,
    network_time_s,
    play_round,
)
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply


class RetryOptions(Protocol):
    """What the loop reads of the request's ``DraftOptions``: how long and how often a
    lost session is reopened, the progress budget across reconnects, the event that
    cancels the reopening, and who is told of a reopening (the error, the tokens committed,
    the seconds it is retried for) and of a resend (the error, the tokens committed, the
    seconds left of the progress budget)."""

    @property
    def retry_timeout_s(self) -> float: ...

    @property
    def retry_backoff_s(self) -> float: ...

    @property
    def progress(self) -> ProgressBudget: ...

    @property
    def cancel(self) -> threading.Event | None: ...

    @property
    def on_reconnect(self) -> Callable[[RequestError, int, float], None] | None: ...

    @property
    def on_resend(self) -> Callable[[RequestError, int, float], None] | None: ...


RECOVERABLE = frozenset({ErrorCode.NOT_FOUND, ErrorCode.UNAVAILABLE})
"""Errors after which the session is reopened: it was lost (server restart, idle expiry)
or the server is unreachable for now."""

REPLAYED = frozenset({ErrorCode.ABORTED})
"""Errors after which the round is played again on the same session: the server dropped
the round's state and committed nothing (a semantic follow-up whose pass lost its
``return_hidden`` rows under ``kv_budget_tokens``, or whose verdict failed to commit)."""


class RoundLoop:
    """The rounds of one generation until it finishes: each decided by the window policy,
    played distributed or handed over fused, committed to the ledger; a lost session is
    reopened (``reconnects``) under a new name (``session_id``), an aborted round played
    again on the same session (``replays``), a call past its deadline sent again
    (``resends``, :meth:`verify`). A semantic run's
    exchanges and accepted mismatches per round are kept for its report."""

    __slots__ = ("clock", "drafter", "exchanges", "first", "ledger", "mismatches", "options",
                 "prompt", "reconnects", "replays", "resends", "resent_s", "rng",
                 "sampling", "session_id", "shaping", "verifier", "watch")  # fmt: skip

    def __init__(
        self,
        verifier: Verifier,
        drafter: DraftBackend,
        prompt: tuple[int, ...],
        sampling: SamplingParams,
        options: RetryOptions,
        clock: Callable[[], float],
        ledger: Ledger,
        first: SessionSpec,
    ) -> None:
        self.verifier, self.drafter, self.prompt = verifier, drafter, prompt
        self.sampling, self.options, self.clock = sampling, options, clock
        self.ledger, self.first, self.session_id = ledger, first, first.session_id
        self.rng = draft_rng(sampling.seed)
        self.shaping = draft_shaping(sampling, len(prompt))  # the drafts' rows as the target's
        self.reconnects = 0
        self.replays = 0
        self.resends = 0
        self.resent_s: float | None = None  # when this round's call was last resent
        self.watch = ProgressWatch(options.progress, clock)
        self.exchanges: list[int] = []
        self.mismatches: list[int] = []

    def run(
        self, policy: WindowPolicy, stop: DraftStopPolicy | None, upload: Upload | None
    ) -> None:
        ledger, clock = self.ledger, self.clock
        decision: WindowDecision | None = None  # handed back by a fused run
        finished = False
        watch = self.watch
        while not finished:
            watch.committed(len(ledger.output))
            if decision is None:
                decision = decide(policy, ledger.history, clock())
            context = (*self.prompt, *ledger.output)
            sent = clock()
            try:
                if decision.fused:
                    decision, finished = fused_handover(
                        self.verifier,
                        policy,
                        ledger,
                        self.session_id,
                        context,
                        decision,
                        self._fused_round,
                    )
                    continue
                gamma = capped_gamma(
                    decision.gamma, self.sampling.max_new_tokens, len(ledger.output)
                )
                network_s = ledger.history.observation(sent).rtt_s  # the last round's, 0 at first
                self.resent_s = None
                played = play_round(
                    self, self.drafter, self.session_id, context, gamma,
                    self.sampling, self.rng, network_s, clock, stop, upload, self.shaping,
                )  # fmt: skip
            except RequestError as exc:
                if ledger.finished:  # a fused run's last round committed, then its stream
                    break  # failed: the output is whole (reopening would decode past its end)
                watch.committed(len(ledger.output))  # a fused run's rounds are progress too
                decision = None  # the policy is asked again for the round that did not run
                self._recover(exc, self._last_heard(sent), watch)
                continue
            finished = self._commit(decision, played)
            decision = None

    def _last_heard(self, sent: float) -> float:
        """When the failed round last sent or received: its start ``sent``, its last resend,
        or a fused run's last round to arrive (the retry window counts from there, not from
        a long run's or a resent round's start)."""
        rounds = self.ledger.rounds
        arrived = rounds[-1].end_s if rounds else sent
        return max(sent, self.resent_s or sent, arrived)

    def _fused_round(self, reply: VerifyReply) -> None:
        """A fused run's round, in the ledger now: one exchange (its chunk), and the draft
        tokens it accepted that mismatched (a semantic session's server judges them), so
        that these lists keep one entry per round of the ledger's."""
        self.exchanges.append(1)
        self.mismatches.append(reply.outcome.accepted_mismatches)

    def _commit(self, decision: WindowDecision, played: PlayedRound) -> bool:
        """Record a distributed round; True when the generation is finished."""
        reply = played.reply
        network_s = network_time_s(reply, played.drafted_s, self.resent_s, played.end_s)
        times = (played.start_s, played.end_s, played.draft_s, network_s / 2, network_s / 2)
        num_drafted = len(played.call.draft_token_ids)
        finished = self.ledger.commit(decision.gamma, num_drafted, reply, times, played.num_passes)
        self.exchanges.append(played.num_exchanges)
        self.mismatches.append(reply.outcome.accepted_mismatches)
        return finished

    def verify(self, call: VerifyCall) -> VerifyReply:
        """``call`` verified (the verifier :func:`play_round` is given): one past its
        deadline is sent again, identical, on the same session, which the server takes over
        with the pass or prefill parts it runs for it (a long prompt's first round on a busy
        server, say), until the progress budget's time is out (then the session is closed
        and :class:`NoProgress` raised) or ``cancel`` is set (:class:`Cancelled`). Each
        sending waits one request timeout, but no longer than is left of the budget
        (:func:`~.bounded_calls.verify_bounded`): a resend costs the server no work, and the
        progress time alone bounds them."""
        while True:
            try:
                remaining_s = self.watch.remaining_s()
                return verify_bounded(self.verifier, call, remaining_s, self.options.cancel)
            except RequestError as exc:
                if not exc.past_deadline:
                    raise
                self._before_resend(exc)
                self.resent_s = self.clock()

    def _before_resend(self, exc: RequestError) -> None:
        options = self.options
        try:
            self.watch.check(exc)  # NoProgress once the budget's time is out
        except NoProgress:
            close_quietly(self.verifier, self.session_id)  # the server holds it: free its KV
            raise
        if options.cancel is not None and options.cancel.is_set():
            raise Cancelled("cancelled while its verification was unanswered")
        self.resends += 1
        if options.on_resend is not None:
            options.on_resend(exc, len(self.ledger.output), self.watch.remaining_s())

    def _recover(self, exc: RequestError, sent: float, watch: ProgressWatch) -> None:
        """Let the round be played again after ``exc``: on the same session when the server
        aborted it, else on the lost session reopened; an error that is neither, or came
        ``retry_timeout_s`` after ``sent`` (the round's last sending or arrival), is raised
        again (the session closed first, unless lost or the server unreachable: its KV would
        wait for the server's idle timeout; a call past its deadline, a fused run's next
        round not come in time too, ``UNAVAILABLE``, may have reached a server busy with its
        pass, a long prompt's first, say, that holds it)."""
        options, clock = self.options, self.clock
        if isinstance(exc, NoProgress):  # resends ran out (verify): the session is closed
            raise exc
        survivable = exc.code in RECOVERABLE or exc.code in REPLAYED
        if not survivable or clock() - sent > options.retry_timeout_s:
            if exc.code not in RECOVERABLE or exc.past_deadline:
                close_quietly(self.verifier, self.session_id)  # the server holds it: free its KV
            raise exc
        if exc.code in REPLAYED:
            self._replay(exc, watch)
        else:
            self._reconnect(exc, watch)

    def _replay(self, exc: RequestError, watch: ProgressWatch) -> None:
        """Count a replay of the aborted round (the session is still open on the server)."""
        self.replays += 1
        try:
            watch.reconnect(exc, replay=True)  # NoProgress once the budget is spent
        except NoProgress:
            close_quietly(self.verifier, self.session_id)
            raise

    def _reconnect(self, exc: RequestError, watch: ProgressWatch) -> None:
        """Reopen a lost session with every committed token as its prompt."""
        options, clock = self.options, self.clock
        self.reconnects += 1
        close_quietly(self.verifier, self.session_id)  # its KV must not wait for the timeout
        watch.reconnect(exc)  # NoProgress once the budget is spent
        retry_s = min(options.retry_timeout_s, watch.remaining_s())
        if options.on_reconnect is not None:
            options.on_reconnect(exc, len(self.ledger.output), retry_s)
        self.session_id = reopen(self.verifier, self.first, self.ledger.output, clock,
                                 self.reconnects, retry_s, options.retry_backoff_s,
                                 watch.check, options.cancel)  # fmt: skip
