"""The verification engine's sessions and their KV caches.

:class:`SessionTable` holds the open sessions (an
:class:`~edgespec.runtime.server.session_record.EngineSession` each), opens them (checked by
:mod:`edgespec.runtime.server.engine_checks`, the rule bound from the engine's rules),
closes them and expires idle ones, keeps the sessions holding KV in LRU order under a token
budget (evicting the oldest), and reports the engine's counters
(:class:`~edgespec.runtime.server.engine_counters.EngineCounters`);
:class:`~edgespec.runtime.server.engine.VerificationEngine` is one that also verifies.

Each open gets a new ``serial``: a verification is bound to the session it was admitted for
(:meth:`SessionTable.session_serial`), never to a later one that reuses the id. A session
keeps its last committed round (its block, not the draft's probabilities or payloads), so
a retry of that round gets the same outcome again (:meth:`SessionTable.replay`) instead of
a second verification (so does the call of a pass waiting for its SH follow-up); an
identical open of a session that has verified nothing yet is a retry too (``is_unused_copy``).
A kept outcome's hidden rows (a ``return_hidden`` session's: its prompt's in its first
round, then at most 1 + K, :mod:`.returned_hidden`; 2.5 KiB a row at Gemma 3 270M's 640
floats), and those of a pass waiting for its SH follow-up, count against the token budget,
a row a token, beside the KV. Evicted, neither is answered without them: a retry of that round is
refused (``FAILED_PRECONDITION``), and so is the follow-up (``ABORTED``: the client sends
the block again; ``FAILED_PRECONDITION`` when the pass alone held more than the budget,
:func:`~edgespec.runtime.server.hidden_followup.evicted_followup_error`).
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping

import numpy as np

from edgespec.runtime.backends.base import TargetBackend
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine_checks import check_session_spec, same_block, same_request
from edgespec.runtime.server.engine_counters import EngineCounters, EngineTally
from edgespec.runtime.server.hidden_followup import PendingHidden, waiting_outcome
from edgespec.runtime.server.prefill_parts import eviction_order
from edgespec.runtime.server.semantic import SEMANTIC, SemanticVerification
from edgespec.runtime.server.session_record import EngineSession, evict, held_tokens, stored_rows
from edgespec.runtime.server.verification import (
    AnyRule,
    VerificationRule,
    bind_rule,
    hidden_state_rule,
)


class SessionTable:
    """The open sessions and their KV caches, under one lock; the LRU token budget."""

    def __init__(
        self,
        backend: TargetBackend,
        kv_budget_tokens: int,
        max_sessions: int,
        clock: Callable[[], float],
        rules: Mapping[str, AnyRule],
    ) -> None:
        self.backend = backend
        self._rules = dict(rules)
        self._budget = kv_budget_tokens
        self._max_sessions = max_sessions
        self._clock = clock
        self._sessions: dict[str, EngineSession] = {}
        # sessions holding KV or a kept outcome's hidden rows, oldest first
        self._lru: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._tally = EngineTally()
        self._serials = itertools.count(1)

    # --- sessions

    def open_session(self, spec: SessionSpec) -> None:
        check_session_spec(spec, self.backend, self._rules, self._budget)
        rule = bind_rule(self._rules[spec.verification_rule], spec)
        hidden_rule = hidden_state_rule(rule)
        if hidden_rule is not None and (problem := getattr(self.backend, "hidden_state_problem",
                                                           None)):  # fmt: skip
            raise RequestError(
                ErrorCode.INVALID_ARGUMENT,
                f"verification rule {spec.verification_rule!r} reads hidden states: {problem}",
            )
        with self._lock:
            if spec.session_id in self._sessions:
                raise RequestError(
                    ErrorCode.INVALID_ARGUMENT, f"session {spec.session_id!r} already exists"
                )
            if len(self._sessions) >= self._max_sessions:
                raise RequestError(
                    ErrorCode.RESOURCE_EXHAUSTED,
                    f"session limit reached ({self._max_sessions} open sessions)",
                )
            self._sessions[spec.session_id] = EngineSession(
                spec=spec,
                rule=rule,
                hidden_rule=hidden_rule,
                tokens=list(spec.prompt_token_ids),
                rng=np.random.default_rng(spec.sampling.seed),
                last_used_s=self._clock(),
                serial=next(self._serials),
                prompt_scores=None if spec.sampling.prompt_logprobs is None else [],
            )

    def is_unused_copy(self, spec: SessionSpec) -> bool:
        """``spec.session_id`` is open with exactly ``spec`` and has verified nothing yet
        (no round committed, in a forward pass or awaiting hidden states): opening it again
        is a retry of that open."""
        with self._lock:
            s = self._sessions.get(spec.session_id)
            if s is None or s.spec != spec or s.in_flight or s.pending is not None:
                return False
            if s.last_round is not None or len(s.tokens) != len(spec.prompt_token_ids):
                return False
            s.last_used_s = self._clock()
            return True

    def close_session(self, session_id: str) -> bool:
        with self._lock:
            self._lru.pop(session_id, None)
            return self._sessions.pop(session_id, None) is not None

    def expire_idle(self, timeout_s: float, busy: Collection[str] = ()) -> list[str]:
        """Close sessions idle for more than ``timeout_s``, except those in ``busy`` or
        mid-verification; returns their ids. Frees their KV memory."""
        now = self._clock()
        with self._lock:
            idle = [
                sid
                for sid, s in self._sessions.items()
                if not s.in_flight and sid not in busy and now - s.last_used_s > timeout_s
            ]
        for sid in idle:
            self.close_session(sid)
        return idle

    def replay(self, call: VerifyCall) -> VerifyOutcome | None:
        """The outcome of the session's last committed round when ``call`` retries it (the
        same ``prefix_len`` and draft block), or of its pass waiting for an SH follow-up
        when ``call`` sends that pass's call again; ``None`` when ``call`` is about neither.
        ``FAILED_PRECONDITION`` when ``call`` sends another block for the committed round."""
        with self._lock:
            s = self._get(call.session_id)
            if s.pending is not None and same_request(call, s.pending.call):
                return waiting_outcome(s.pending)  # the reply asking for hidden states, lost
            last = s.last_round
            if last is None or call.prefix_len != last[0].prefix_len:
                return None
            if same_block(call, last[0]):
                if s.rows_evicted:
                    raise RequestError(
                        ErrorCode.FAILED_PRECONDITION,
                        f"session {call.session_id!r}: the reply of its round at prefix_len "
                        f"{call.prefix_len} is no longer held (its {s.rows_evicted} hidden "
                        "rows were evicted under kv_budget_tokens); reopen the session",
                    )
                return last[1]
            raise RequestError(
                ErrorCode.FAILED_PRECONDITION,
                f"session {call.session_id!r} already committed its round at prefix_len "
                f"{call.prefix_len} with another draft block; it has {len(s.tokens)} "
                "committed tokens",
            )

    def session_serial(self, session_id: str) -> int:
        """The serial of the open session ``session_id``: a verification admitted for it
        names it (:meth:`~edgespec.runtime.server.engine.VerificationEngine.verify_batch`)."""
        return self._get(session_id).serial

    def is_session(self, session_id: str, serial: int) -> bool:
        """``session_id`` is open and is the session opened as ``serial``."""
        with self._lock:
            s = self._sessions.get(session_id)
            return s is not None and s.serial == serial

    def session_tokens(self, session_id: str) -> tuple[int, ...]:
        return tuple(self._get(session_id).tokens)

    def session_finished(self, session_id: str) -> bool:
        return self._get(session_id).finished

    def session_spec(self, session_id: str) -> SessionSpec:
        return self._get(session_id).spec

    def session_rule(self, session_id: str) -> VerificationRule:
        """The rule the session was bound to when it opened."""
        return self._get(session_id).rule

    def session_pending(self, session_id: str) -> PendingHidden | None:
        """The session's pass waiting for its SH follow-up (``None``: none waits)."""
        with self._lock:
            return self._get(session_id).pending

    # --- the KV budget

    def _store_round(self, s: EngineSession, block: VerifyCall, outcome: VerifyOutcome) -> None:
        """Keep ``s``'s committed round for a retry; ``s`` goes to the LRU's newest end."""
        s.last_round, s.rows_evicted = (block, outcome), 0
        self._relist(s)

    def _relist(self, s: EngineSession) -> None:
        """``s``, still open, at the LRU's newest end when it holds KV or kept hidden rows
        (out of it otherwise)."""
        if not self._holds(s):
            return
        self._lru.pop(s.spec.session_id, None)
        if s.kv is not None or stored_rows(s):
            self._lru[s.spec.session_id] = None

    def _enforce_budget(self, ran: Collection[str] = ()) -> None:
        """Evict the oldest sessions' KV and kept hidden rows (a row a token) while the
        sessions in the LRU hold more tokens than the budget; those between the parts of a
        prefill in parts last, those of the batch just run (``ran``) among them last of all
        (:func:`~.prefill_parts.eviction_order`)."""
        total = sum(held_tokens(self._sessions[sid]) for sid in self._lru)
        for sid in eviction_order(self._lru, self._sessions, ran):
            if total <= self._budget:
                break
            del self._lru[sid]
            s = self._sessions[sid]
            total -= held_tokens(s)
            self._tally.num_evictions += evict(s, self._budget)

    # --- helpers

    @property
    def semantic_head_sha256(self) -> str:
        """The SHA-256 of the decision head served as ``"semantic"`` ("" when none; Health
        says it)."""
        rule = self._rules.get(SEMANTIC)
        return rule.head_sha256 if isinstance(rule, SemanticVerification) else ""

    def num_live_sessions(self) -> int:
        """Open sessions that still generate (each will send another verification)."""
        with self._lock:
            return sum(1 for s in self._sessions.values() if not s.finished)

    def counters(self) -> EngineCounters:
        with self._lock:  # the sessions in a pass hold theirs too (out of the LRU meanwhile)
            held = [s for s in self._sessions.values() if s.kv is not None]
            return EngineCounters(
                **self._tally.scalars(),
                num_cached_tokens=sum(s.kv_len for s in held),
                num_cached_bytes=sum(self.backend.kv_bytes(s.kv) for s in held if s.kv is not None),
                num_sessions=len(self._sessions),
                semantic_sessions=tuple(sorted(self._tally.semantic_sessions.items())),
                accepted_mismatches=tuple(sorted(self._tally.accepted_mismatches.items())),
            )

    def _holds(self, s: EngineSession) -> bool:
        """``s`` is still open (not closed, nor replaced by a later open of its id)."""
        return self._sessions.get(s.spec.session_id) is s

    def _get(self, session_id: str) -> EngineSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError(ErrorCode.NOT_FOUND, f"unknown session {session_id!r}")
        return session
