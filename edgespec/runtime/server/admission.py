"""The service's gate: who may open, verify and queue what, and what the batching policy
sees of each queued verification.

:class:`Admission` runs the session-state and per-client rules of a verify call
(:mod:`edgespec.runtime.server.clients`, the engine's checks, one verification in flight per
session, the queue limits) and turns an admitted call into the
:class:`~edgespec.core.types.PendingVerification` the batching policy sees: its sizes from
the engine's prefix cache, and from :class:`SloBook` its expected accepted draft tokens
N̂ᵛ = α̂·N_d and its deadline under the server's ``deadline_rule``. Both come from
:mod:`edgespec.policies.slo`, the functions the simulator calls.

Of a deadline's inputs, the server measures the arrival (enqueue time), the request's
start (session open time), the committed tokens and α̂ (accepted / drafted positions of
the session's verified rounds, shrunk towards the prior); the client reports the two it
alone can measure, its drafting time of the block and its last network time
(``VerifyCall.draft_s`` / ``network_s``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from edgespec.core.tree import tree_depth
from edgespec.core.types import PendingVerification, VerifyResult
from edgespec.policies.slo import DeadlineRule, acceptance_estimate, verification_deadline_s
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.clients import ClientBook
from edgespec.runtime.server.config import ServerConfig
from edgespec.runtime.server.engine import VerificationEngine


@dataclass(frozen=True, slots=True)
class SloEstimate:
    """A queued verification's deadline (``None``: its class has no token-speed target) and
    its expected accepted draft tokens."""

    deadline_s: float | None
    expected_accepted: float


@dataclass(slots=True)
class _Progress:
    start_s: float
    num_drafted: int = 0
    num_accepted: int = 0


class SloBook:
    """Per open session: its start time and the drafted / accepted positions of its
    verified rounds (a token tree counts its depth, as the drafter's window inputs do)."""

    def __init__(self, slo_classes: Mapping[str, float | None], rule: DeadlineRule) -> None:
        self._classes = slo_classes
        self._rule = rule
        self._sessions: dict[str, _Progress] = {}

    def opened(self, session_id: str, now_s: float) -> None:
        self._sessions[session_id] = _Progress(now_s)

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def verified(self, session_id: str, result: VerifyResult) -> None:
        progress = self._sessions.get(session_id)
        if progress is not None:
            progress.num_drafted += result.num_drafted
            progress.num_accepted += result.num_accepted

    def estimate(self, spec: SessionSpec, call: VerifyCall, arrival_s: float) -> SloEstimate:
        """N̂ᵛ = α̂·N_d and the deadline of ``call``, arriving at ``arrival_s``."""
        progress = self._sessions.get(spec.session_id) or _Progress(arrival_s)
        positions = (
            len(call.draft_token_ids)
            if call.draft_parents is None
            else tree_depth(call.draft_parents)
        )
        alpha = acceptance_estimate(progress.num_drafted, progress.num_accepted)
        expected = alpha * positions
        deadline = verification_deadline_s(
            self._rule,
            self._classes.get(spec.slo_class),
            arrival_s=arrival_s,
            start_s=progress.start_s,
            num_committed=call.prefix_len - len(spec.prompt_token_ids),
            expected_accepted=expected,
            draft_s=call.draft_s,
            network_s=call.network_s,
        )
        return SloEstimate(deadline, expected)


class Admission:
    """Opens and closes sessions and admits verify calls for a
    :class:`~edgespec.runtime.server.service.VerificationService` (raises :class:`RequestError`)."""

    def __init__(self, engine: VerificationEngine, config: ServerConfig) -> None:
        self._engine = engine
        self._config = config
        self.clients = ClientBook(config)
        self.slo = SloBook(config.slo_classes, config.deadline_rule)

    def open(self, spec: SessionSpec, owner: str | None, now_s: float) -> bool:
        """Open ``spec`` for ``owner``; ``False`` (nothing changes) when this retries the
        open that made the session: the same spec and owner, and no verification since."""
        if self.clients.owns(spec.session_id, owner) and self._engine.is_unused_copy(spec):
            return False
        self.clients.check_open(spec, owner)
        self._engine.open_session(spec)
        self.clients.opened(spec, owner)
        self.slo.opened(spec.session_id, now_s)
        return True

    def close(self, session_id: str, owner: str | None) -> bool:
        self.clients.check_owner(session_id, owner)
        self.forget(session_id)
        return self._engine.close_session(session_id)

    def forget(self, session_id: str) -> None:
        """Drop what the gate keeps of a session the engine closed or expired."""
        self.clients.forget(session_id)
        self.slo.forget(session_id)

    def replay(self, call: VerifyCall, owner: str | None) -> VerifyOutcome | None:
        """The outcome of the session's last committed round when ``call`` retries it
        (:meth:`~edgespec.runtime.server.engine_sessions.SessionTable.replay`)."""
        self.clients.check_owner(call.session_id, owner)
        return self._engine.replay(call)

    def admit(
        self,
        call: VerifyCall,
        owner: str | None,
        queued_sessions: Iterable[str],
        in_flight: Collection[str],
        entry_id: int,
        now_s: float,
    ) -> PendingVerification:
        """``call`` as queue entry ``entry_id`` arriving at ``now_s``, if every rule holds
        (``queued_sessions``: the sessions of the queued calls)."""
        config = self._config
        self.clients.check_owner(call.session_id, owner)
        if call.session_id in in_flight:  # before the session's state, which its
            raise RequestError(  # verification may be committing meanwhile
                ErrorCode.FAILED_PRECONDITION,
                f"session {call.session_id!r} already has a verification in flight",
            )
        self._engine.validate(call, config.max_draft_tokens)
        queued = list(queued_sessions)
        self.clients.check_queue_share(call.session_id, queued)
        if len(queued) >= config.max_queue_depth:
            raise RequestError(
                ErrorCode.RESOURCE_EXHAUSTED,
                f"verification queue is full ({config.max_queue_depth} waiting)",
            )
        num_new, num_cached = self._engine.pending_sizes(call.session_id, len(call.draft_token_ids))
        spec = self._engine.session_spec(call.session_id)
        slo = self.slo.estimate(spec, call, now_s)
        return PendingVerification(
            entry_id=entry_id,
            session_id=call.session_id,
            client_id=self.clients.label(spec),
            enqueued_s=now_s,
            num_draft_tokens=len(call.draft_token_ids),
            num_new_tokens=num_new,
            num_cached_tokens=num_cached,
            slo_class=spec.slo_class,
            deadline_s=slo.deadline_s,
            expected_accepted=slo.expected_accepted,
        )
