"""Verification engine: batched one-step verification over a per-session KV prefix cache.

Session invariant: ``tokens`` is the committed sequence (prompt + output); the KV cache
covers ``tokens[:kv_len]`` with ``kv_len <= len(tokens) - 1`` (the newest committed
token, the previous round's extra token, is forwarded next round). A verification of K
draft tokens forwards ``tokens[kv_len:] + draft`` (normally 1 + K tokens) and reads the
K + 1 target distributions from the last K + 1 positions; afterwards the cache keeps
the accepted draft tokens and drops the rejected ones. The cache is bounded by a token
budget with LRU eviction; an evicted session is re-prefilled from its stored tokens on
its next verification, so clients never notice (``num_reprefills`` counts it). A session
opened with ``return_hidden`` also gets the target's hidden states of the forwarded
positions that are now committed (``VerifyOutcome.target_hidden``). With
``prefix_cache=False`` (the SLED-style baseline) no KV outlives a verification: every one
forwards the session's whole context, and the outputs are the same.

A session's rule (:mod:`edgespec.runtime.server.verification`) is bound when it opens. A rule
that reads the target's hidden states (the lossy ``"semantic"`` rule) gets them for its K + 1
logit rows; when it answers :class:`~edgespec.runtime.server.verification.HiddenStatesNeeded`
(SH upload: it needs the draft's hidden states of some positions) the engine keeps the
forward pass, commits nothing and answers with ``VerifyOutcome.hidden_request``; the
session's next call must be the follow-up with those rows, which is decided from the kept
pass without another forward. A session waiting for its follow-up holds the pass's KV
outside the LRU budget until it is decided, closed or expires.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from time import monotonic

import numpy as np
import numpy.typing as npt

from edgespec.core.types import VerifyResult
from edgespec.runtime.backends.base import ForwardItem, ForwardOutput, KVState, TargetBackend
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.engine_checks import (
    check_followup,
    check_session_spec,
    check_verify_call,
)
from edgespec.runtime.server.verification import (
    EXACT_RULES,
    AnyRule,
    HiddenStateRule,
    HiddenStatesNeeded,
    Verdict,
    VerificationRule,
    bind_rule,
    cut_committed,
    hidden_state_rule,
)


@dataclass(frozen=True, slots=True)
class EngineCounters:
    num_forward_passes: int
    num_tokens_forwarded: int
    num_verifications: int
    num_cache_hits: int
    num_cache_misses: int
    num_reprefills: int
    num_evictions: int
    num_cached_tokens: int
    num_cached_bytes: int
    num_sessions: int

    @property
    def cache_hit_ratio(self) -> float:
        total = self.num_cache_hits + self.num_cache_misses
        return self.num_cache_hits / total if total else 0.0


@dataclass(slots=True)
class _Tally:
    """The engine's running counts (under its lock); :meth:`VerificationEngine.counters`
    reports them with the cache's current size as :class:`EngineCounters`."""

    num_forward_passes: int = 0
    num_tokens_forwarded: int = 0
    num_verifications: int = 0
    num_cache_hits: int = 0
    num_cache_misses: int = 0
    num_reprefills: int = 0
    num_evictions: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class _Pending:
    """A verification waiting for the client's draft hidden states (SH upload): its call,
    forward item and output, the target's hidden rows of its logit rows, and the draft
    positions asked for."""

    call: VerifyCall
    item: ForwardItem
    out: ForwardOutput
    target_hidden: npt.NDArray[np.float32]
    positions: tuple[int, ...]


@dataclass(slots=True)
class _Session:
    spec: SessionSpec
    rule: VerificationRule
    tokens: list[int]
    rng: np.random.Generator
    last_used_s: float
    kv: KVState | None = None
    kv_len: int = 0
    was_evicted: bool = False
    finished: bool = False
    num_output_tokens: int = 0
    in_flight: bool = field(default=False)
    hidden_rule: HiddenStateRule | None = None  # the rule, when it reads hidden states
    pending: _Pending | None = None  # a verification waiting for its follow-up


class VerificationEngine:
    """Owns the sessions and their KV caches; runs batches on a :class:`TargetBackend`.

    Thread-safe: the server calls :meth:`verify_batch` from a worker thread while its
    event loop opens, validates and closes sessions.
    """

    def __init__(
        self,
        backend: TargetBackend,
        kv_budget_tokens: int = 65536,
        max_sessions: int = 256,
        clock: Callable[[], float] = monotonic,
        rules: Mapping[str, AnyRule] = EXACT_RULES,
        prefix_cache: bool = True,
    ) -> None:
        self.backend = backend
        self._prefix_cache = prefix_cache
        self._rules = dict(rules)
        self._budget = kv_budget_tokens
        self._max_sessions = max_sessions
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._lru: OrderedDict[str, None] = OrderedDict()  # sessions holding KV, oldest first
        self._lock = threading.Lock()
        self._tally = _Tally()

    # --- sessions

    def open_session(self, spec: SessionSpec) -> None:
        check_session_spec(spec, self.backend, self._rules)
        rule = bind_rule(self._rules[spec.verification_rule], spec)
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
            self._sessions[spec.session_id] = _Session(
                spec=spec,
                rule=rule,
                hidden_rule=hidden_state_rule(rule),
                tokens=list(spec.prompt_token_ids),
                rng=np.random.default_rng(spec.sampling.seed),
                last_used_s=self._clock(),
            )

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

    def session_tokens(self, session_id: str) -> tuple[int, ...]:
        return tuple(self._get(session_id).tokens)

    def session_finished(self, session_id: str) -> bool:
        return self._get(session_id).finished

    def session_spec(self, session_id: str) -> SessionSpec:
        return self._get(session_id).spec

    def session_rule(self, session_id: str) -> VerificationRule:
        """The rule the session was bound to when it opened."""
        return self._get(session_id).rule

    # --- verification

    def validate(self, call: VerifyCall, max_draft_tokens: int) -> None:
        """Raise :class:`RequestError` saying what is wrong with ``call``
        (:func:`~edgespec.runtime.server.engine_checks.check_verify_call`)."""
        session = self._get(call.session_id)
        pending = session.pending
        if pending is not None and session.hidden_rule is not None:
            check_followup(call, pending.call, pending.positions)
            session.hidden_rule.check_followup(call, pending.positions)
            return
        check_verify_call(
            call,
            len(session.tokens),
            session.finished,
            session.spec,
            self.backend,
            session.rule,
            max_draft_tokens,
        )

    def pending_sizes(self, session_id: str, num_draft: int) -> tuple[int, int]:
        """(num_new_tokens, num_cached_tokens) a verification of ``num_draft`` would have."""
        s = self._get(session_id)
        if s.pending is not None:  # a follow-up forwards nothing: its pass is kept
            return 0, s.pending.item.kv_len + len(s.pending.item.new_token_ids)
        return len(s.tokens) - s.kv_len + num_draft, s.kv_len

    def verify_batch(self, calls: Sequence[VerifyCall]) -> list[VerifyOutcome | RequestError]:
        """Verify all calls in ONE backend forward pass. Calls must be pre-validated and
        name distinct sessions; a call whose session vanished meanwhile gets its error."""
        results: list[VerifyOutcome | RequestError] = []
        live: list[tuple[int, _Session, VerifyCall, ForwardItem]] = []
        followups: list[tuple[int, _Session, VerifyCall]] = []
        with self._lock:
            for index, c in enumerate(calls):
                s = self._sessions.get(c.session_id)
                if s is not None and s.pending is not None and c.prefix_len == len(s.tokens):
                    results.append(RequestError(ErrorCode.UNAVAILABLE, "not run"))
                    followups.append((index, s, c))  # decided from the kept pass
                    continue
                if s is None or s.finished or c.prefix_len != len(s.tokens):
                    results.append(
                        RequestError(ErrorCode.NOT_FOUND, f"unknown session {c.session_id!r}")
                        if s is None
                        else RequestError(
                            ErrorCode.FAILED_PRECONDITION,
                            f"session {c.session_id!r} changed before verification",
                        )
                    )
                    continue
                results.append(RequestError(ErrorCode.UNAVAILABLE, "not run"))  # placeholder
                s.in_flight = True
                if s.kv is None:
                    self._tally.num_cache_misses += 1
                    self._tally.num_reprefills += int(s.was_evicted)
                    s.kv_len = 0
                else:
                    self._tally.num_cache_hits += 1
                    self._lru.pop(c.session_id, None)  # not evictable while in flight
                new = (*s.tokens[s.kv_len :], *c.draft_token_ids)
                k = len(c.draft_token_ids)
                want_hidden = s.spec.return_hidden or s.hidden_rule is not None
                item = ForwardItem(s.kv, s.kv_len, new, k + 1, want_hidden, c.draft_parents)
                live.append((index, s, c, item))
        if not live and not followups:
            return results
        try:
            outputs = self.backend.forward([item for _, _, _, item in live]) if live else []
        except Exception:
            with self._lock:  # sessions keep their caches: back into the LRU
                for _, s, c, _ in live:
                    if s.kv is not None and c.session_id in self._sessions:
                        self._lru[c.session_id] = None
            raise
        finally:
            with self._lock:
                for _, s, _, _ in live:
                    s.in_flight = False
        with self._lock:
            if live:
                self._tally.num_forward_passes += 1
            self._tally.num_tokens_forwarded += sum(
                len(item.new_token_ids) for _, _, _, item in live
            )
            self._tally.num_verifications += len(live)
            for (index, s, c, item), out in zip(live, outputs, strict=True):
                if s.hidden_rule is None:
                    results[index] = self._apply(s, c, item, out)
                else:
                    results[index] = self._judge_hidden(s, c, item, out)
            for index, s, c in followups:
                results[index] = self._decide_followup(s, c)
            self._enforce_budget()
        return results

    def _judge_hidden(
        self, s: _Session, call: VerifyCall, item: ForwardItem, out: ForwardOutput
    ) -> VerifyOutcome | RequestError:
        """A hidden-state rule's verification: a verdict, or a request for the draft's
        hidden states (the pass is kept, nothing is committed)."""
        assert s.hidden_rule is not None and out.hidden is not None
        rows = out.hidden[len(item.new_token_ids) - item.num_logits :]
        try:
            judged = s.hidden_rule.verdict_hidden(call, s.spec.sampling, out.logits, rows)
        except Exception as exc:  # the session keeps its state; the others go on
            return self._rule_failed(s, call, exc)
        if isinstance(judged, Verdict):
            return self._apply(s, call, item, out, judged)
        s.pending = _Pending(call, item, out, rows, judged.positions)
        s.kv = None  # the kept pass's KV extends it; it is cropped from there when decided
        s.last_used_s = self._clock()
        return _waiting_outcome(call, out.logits, judged, len(item.new_token_ids), item.kv_len)

    def _decide_followup(self, s: _Session, call: VerifyCall) -> VerifyOutcome | RequestError:
        """The verdict of a kept pass, now that ``call`` brought the hidden states."""
        pending, rule = s.pending, s.hidden_rule
        if pending is None or rule is None or call.session_id not in self._sessions:
            return RequestError(
                ErrorCode.FAILED_PRECONDITION,
                f"session {call.session_id!r} changed before verification",
            )
        sampling = s.spec.sampling
        try:
            judged = rule.verdict_hidden(
                pending.call, sampling, pending.out.logits, pending.target_hidden, call
            )
        except Exception as exc:
            return self._rule_failed(s, call, exc)
        if not isinstance(judged, Verdict):
            return RequestError(
                ErrorCode.INTERNAL,
                f"verification rule {s.spec.verification_rule!r} asked session "
                f"{call.session_id!r} for hidden states twice",
            )
        s.pending = None
        return self._apply(s, pending.call, pending.item, pending.out, judged)

    def _rule_failed(self, s: _Session, call: VerifyCall, exc: Exception) -> RequestError:
        if s.kv is not None and call.session_id in self._sessions:
            self._lru[call.session_id] = None  # back into the LRU, unchanged
        return RequestError(
            ErrorCode.INTERNAL,
            f"verification rule {s.spec.verification_rule!r} failed: {exc!r}",
        )

    def _apply(
        self,
        s: _Session,
        call: VerifyCall,
        item: ForwardItem,
        out: ForwardOutput,
        judged: Verdict | None = None,
    ) -> VerifyOutcome:
        sampling, draft = s.spec.sampling, call.draft_token_ids
        if judged is None:
            judged = s.rule.verdict(call, sampling, out.logits, s.rng)
        result, path = judged.result, judged.path
        budget = sampling.max_new_tokens - s.num_output_tokens
        committed = cut_committed(result.committed_token_ids, budget, self.backend.eos_token_ids)
        old_total = len(s.tokens)
        s.tokens.extend(committed)
        s.num_output_tokens += len(committed)
        s.finished = s.num_output_tokens >= sampling.max_new_tokens or (
            bool(committed) and committed[-1] in self.backend.eos_token_ids
        )
        s.last_used_s = self._clock()
        accepted = path if path is not None else tuple(range(result.num_accepted))
        kv_nodes = accepted[: max(len(committed) - 1, 0)]  # the newest token is forwarded next
        if call.session_id in self._sessions and not s.finished and self._prefix_cache:
            s.kv_len = old_total + len(kv_nodes)
            if path is None:
                s.kv = self.backend.crop(out.kv, s.kv_len)
            else:  # keep the accepted path's entries, drop the other branches
                keep = [*range(old_total), *(old_total + i for i in kv_nodes)]
                s.kv = self.backend.gather(out.kv, keep)
            self._lru[call.session_id] = None
        else:
            s.kv, s.kv_len = None, 0
        hidden = None
        if s.spec.return_hidden and out.hidden is not None:  # forwarded, now committed:
            # context + accepted
            num_context = len(item.new_token_ids) - len(draft)
            rows = [*range(num_context), *(num_context + i for i in accepted[: len(committed)])]
            hidden = out.hidden[rows]
        return VerifyOutcome(
            result,
            tuple(committed),
            s.finished,
            len(item.new_token_ids),
            hidden,
            item.kv_len,
            path,
            accepted_mismatches=judged.accepted_mismatches,
        )

    def _enforce_budget(self) -> None:
        total = sum(self._sessions[sid].kv_len for sid in self._lru)
        while total > self._budget and self._lru:
            sid, _ = self._lru.popitem(last=False)
            s = self._sessions[sid]
            total -= s.kv_len
            s.kv, s.kv_len, s.was_evicted = None, 0, True
            self._tally.num_evictions += 1

    # --- helpers

    def num_live_sessions(self) -> int:
        """Open sessions that still generate (each will send another verification)."""
        with self._lock:
            return sum(1 for s in self._sessions.values() if not s.finished)

    def counters(self) -> EngineCounters:
        with self._lock:
            held = [self._sessions[sid] for sid in self._lru]
            return EngineCounters(
                **dataclasses.asdict(self._tally),
                num_cached_tokens=sum(s.kv_len for s in held),
                num_cached_bytes=sum(self.backend.kv_bytes(s.kv) for s in held),
                num_sessions=len(self._sessions),
            )

    def _get(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError(ErrorCode.NOT_FOUND, f"unknown session {session_id!r}")
        return session


def _waiting_outcome(
    call: VerifyCall,
    logits: npt.NDArray[np.float32],
    needed: HiddenStatesNeeded,
    num_forwarded: int,
    kv_len: int,
) -> VerifyOutcome:
    """The outcome of a verification waiting for hidden states: nothing committed; its
    result is the greedy prefix before the first position asked about."""
    draft = call.draft_token_ids
    first = needed.positions[0] if needed.positions else len(draft)
    result = VerifyResult(
        num_drafted=len(draft),
        num_accepted=first,
        first_rejection=first if first < len(draft) else None,
        extra_token=int(np.argmax(logits[first])),
        accepted_token_ids=tuple(draft[:first]),
    )
    return VerifyOutcome(
        result, (), False, num_forwarded, None, kv_len, hidden_request=needed.positions
    )
