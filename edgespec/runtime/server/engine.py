"""Verification engine: batched one-step verification over a per-session KV prefix cache.

Session invariant: ``tokens`` is the committed sequence (prompt + output); the KV cache
covers ``tokens[:kv_len]`` with ``kv_len <= len(tokens) - 1`` (the newest committed
token, the previous round's extra token, is forwarded next round). A verification of K
draft tokens forwards ``tokens[kv_len:] + draft`` (normally 1 + K tokens) and reads the
K + 1 target distributions from the last K + 1 positions; afterwards the cache keeps
the accepted draft tokens and drops the rejected ones. The cache is bounded by a token
budget with LRU eviction; an evicted session is re-prefilled from its stored tokens on
its next verification, so clients never notice (``num_reprefills`` counts it). A session
opened with ``return_hidden`` also gets the target's hidden states of the committed
positions its client lacks (``VerifyOutcome.target_hidden``, which ones:
:mod:`edgespec.runtime.server.returned_hidden`). With ``prefix_cache=False`` (the
SLED-style baseline) no KV outlives a verification: each forwards the whole context (same
outputs). With ``prefill_part_tokens``, a long uncached context is forwarded a part per
batch (:mod:`edgespec.runtime.server.prefill_parts`).

The sessions, their KV caches and the LRU budget are the engine's
:class:`~edgespec.runtime.server.engine_sessions.SessionTable`. A session's rule
(:mod:`edgespec.runtime.server.verification`) is bound when it opens. A rule that reads the
target's hidden states (the lossy ``"semantic"`` rule) gets them for its K + 1 logit rows
and may keep the forward pass waiting for the draft's hidden states (SH upload,
:mod:`edgespec.runtime.server.hidden_followup`); the engine commits nothing then (the
session's cache is the pass's KV meanwhile, past its committed tokens), and decides the
session's follow-up from the kept pass without another forward."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from time import monotonic

from edgespec.runtime.backends.base import ForwardItem, ForwardOutput, TargetBackend
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import VerifyCall, VerifyOutcome
from edgespec.runtime.server.commit import commit_verdict
from edgespec.runtime.server.engine_checks import check_verify_call
from edgespec.runtime.server.engine_sessions import SessionTable
from edgespec.runtime.server.hidden_followup import (
    check_followup_call,
    decide_followup,
    evicted_followup_error,
    followup_sizes,
    judge_pass,
    logit_hidden_rows,
    waiting_outcome,
)
from edgespec.runtime.server.logits_processing import processed_rows
from edgespec.runtime.server.prefill_parts import (
    PrefillPart,
    keep_part,
    merge_kept_rows,
    next_part,
    next_pass_sizes,
    part_item,
)
from edgespec.runtime.server.returned_hidden import first_returned_position
from edgespec.runtime.server.session_record import (
    EngineSession,
    RoundStart,
    RuleFailed,
    rule_failure,
    settle_failure,
    unrunnable_call,
)
from edgespec.runtime.server.verification import EXACT_RULES, AnyRule, Verdict

_Live = tuple[int, EngineSession, VerifyCall, ForwardItem, bool]
"""A call forwarded in this batch: (its index, session, call, forward item, is it a part)."""
_Result = VerifyOutcome | RequestError | PrefillPart  # a call's answer from a batch
_Followup = tuple[int, EngineSession, VerifyCall]
"""A semantic SH follow-up, decided from the session's kept pass: (index, session, call)."""


class VerificationEngine(SessionTable):
    """Owns the sessions and their KV caches; runs batches on a :class:`TargetBackend`.

    Thread-safe: the server calls :meth:`verify_batch` from a worker thread while its
    event loop opens, validates and closes sessions. A failure while building or settling
    one session's pass fails that call alone (:meth:`_claim`, :meth:`_guarded`)."""

    def __init__(
        self,
        backend: TargetBackend,
        kv_budget_tokens: int = 65536,
        max_sessions: int = 256,
        clock: Callable[[], float] = monotonic,
        rules: Mapping[str, AnyRule] = EXACT_RULES,
        prefix_cache: bool = True,
        prefill_part_tokens: int | None = None,
    ) -> None:
        super().__init__(backend, kv_budget_tokens, max_sessions, clock, rules)
        self._prefix_cache = prefix_cache
        self._prefill_part_tokens = prefill_part_tokens

    # --- verification

    def validate(self, call: VerifyCall, max_draft_tokens: int) -> None:
        """Raise :class:`RequestError` saying what is wrong with ``call``
        (:func:`~edgespec.runtime.server.engine_checks.check_verify_call`)."""
        session = self._get(call.session_id)
        pending = session.pending
        if pending is not None and session.hidden_rule is not None:
            check_followup_call(call, pending, session.hidden_rule)
            return
        check_verify_call(call, len(session.tokens), session.finished, session.spec,
                          self.backend, session.rule, max_draft_tokens)  # fmt: skip

    def pending_sizes(self, session_id: str, num_draft: int) -> tuple[int, int]:
        """(num_new_tokens, num_cached_tokens) a verification of ``num_draft`` would have."""
        s = self._get(session_id)
        if s.pending is not None:  # a follow-up forwards nothing: its pass is kept
            return followup_sizes(s.pending)
        return next_pass_sizes(s, num_draft, self._prefill_part_tokens, self._budget)

    def verify_batch(
        self, calls: Sequence[VerifyCall], serials: Sequence[int] | None = None
    ) -> list[VerifyOutcome | RequestError | PrefillPart]:
        """Verify all calls in ONE backend forward pass. Calls must be pre-validated and
        name distinct sessions; a call whose session vanished meanwhile gets its error, one
        whose pass forwards a prefill part a :class:`PrefillPart` (send it again).
        ``serials``: the session each call was admitted for (:meth:`session_serial`), so
        a call whose session closed never touches a later one under the same id (``None``:
        the sessions open now)."""
        with self._lock:
            results, live, followups = self._claim(calls, serials)
        if not live and not followups:
            return results
        try:
            outputs = self.backend.forward([e[3] for e in live]) if live else []
        except Exception:
            with self._lock:  # sessions keep their caches (and stored rows): back into the LRU
                for _, s, *_ in live:
                    self._relist(s)
            raise
        finally:
            with self._lock:
                for _, s, *_ in live:
                    s.in_flight = False
        with self._lock:
            self._tally.count_pass([e[3] for e in live], sum(part for *_, part in live))
            for (index, s, c, item, part), out in zip(live, outputs, strict=True):
                results[index] = self._guarded(s, partial(self._settle, s, c, item, out, part))
            for index, s, c in followups:
                results[index] = self._guarded(s, partial(self._decide_followup, s, c), c)
            self._enforce_budget({c.session_id for _, _, c, *_ in live})
        return results

    def _guarded(
        self, s: EngineSession, settle: Callable[[], _Result], followup: VerifyCall | None = None
    ) -> _Result:
        """``settle()``, ``s``'s share of the batch; one that raises fails that call alone
        (:func:`.session_record.settle_failure`), ``s`` put back as it was before
        (:class:`RoundStart`), so the other sessions' rounds stand."""
        start = RoundStart.of(s)
        try:
            return settle()
        except Exception as exc:
            start.restore(s)
            self._relist(s)
            return settle_failure(exc, followup)

    def _settle(
        self, s: EngineSession, c: VerifyCall, item: ForwardItem, out: ForwardOutput, part: bool
    ) -> _Result:
        """The pass's result for ``s``: a part kept, a verdict, or a request for hidden states."""
        if part:
            return self._keep_part(s, c, item, out)
        item, out = merge_kept_rows(s, item, out)  # a prefill in parts: its last pass
        if s.hidden_rule is None:
            return self._apply(s, c, item, out)
        return self._judge_hidden(s, c, item, out)

    def _claim(
        self, calls: Sequence[VerifyCall], serials: Sequence[int] | None
    ) -> tuple[list[VerifyOutcome | RequestError | PrefillPart], list[_Live], list[_Followup]]:
        """(a placeholder or the error per call, the calls to forward with their items,
        the SH follow-ups decided from a kept pass), under the lock: each forwarded
        session is marked in flight and taken out of the LRU."""
        results: list[VerifyOutcome | RequestError | PrefillPart] = []
        live: list[_Live] = []
        followups: list[_Followup] = []
        for index, c in enumerate(calls):
            s = self._sessions.get(c.session_id)
            error = unrunnable_call(c, s, None if serials is None else serials[index])
            results.append(error or RequestError(ErrorCode.UNAVAILABLE, "not run"))  # placeholder
            if s is None or error is not None:
                continue
            if s.pending is not None:  # an SH follow-up: decided from the kept pass
                followups.append((index, s, c))
                continue
            try:
                live.append((index, s, c, *self._forward_item(s, c)))
            except Exception as exc:  # that call fails alone; the others' passes go on
                s.in_flight = False
                self._relist(s)
                why = f"verification failed building the target's pass: {exc!r}"
                results[index] = RequestError(ErrorCode.INTERNAL, why)
        return results, live, followups

    def _forward_item(self, s: EngineSession, c: VerifyCall) -> tuple[ForwardItem, bool]:
        """The session's uncached tokens and the draft, to forward now, or the next part of
        its uncached tokens (``True``: a part); its cache is counted as a hit or a miss at
        a verification's first pass, a miss re-prefilling from 0."""
        s.in_flight = True
        if s.prefill_start is None:  # a verification's first pass: a cache hit or a miss
            hit = s.kv is not None
            self._tally.num_cache_hits += hit
            self._tally.num_cache_misses += not hit
            self._tally.num_reprefills += not hit and s.was_evicted
            s.kv_len = s.kv_len if hit else 0
        self._lru.pop(c.session_id, None)  # not evictable while in flight
        k = len(c.draft_token_ids)
        part = next_part(s, k, self._prefill_part_tokens, self._budget)
        if part is not None:  # a long uncached context: its next part alone
            return part_item(s, part), True
        new = (*s.tokens[s.kv_len :], *c.draft_token_ids)
        want_hidden = s.spec.return_hidden or s.hidden_rule is not None
        return ForwardItem(s.kv, s.kv_len, new, k + 1, want_hidden, c.draft_parents,
                           hidden_of_logits_only=not s.spec.return_hidden), False  # fmt: skip

    def _keep_part(
        self, s: EngineSession, call: VerifyCall, item: ForwardItem, out: ForwardOutput
    ) -> PrefillPart:
        """``s`` keeps a part's KV (and rows), in the LRU; the sizes of its next pass."""
        keep_part(s, item, out)
        self._relist(s)
        s.last_used_s = self._clock()
        sizes = next_pass_sizes(
            s, len(call.draft_token_ids), self._prefill_part_tokens, self._budget
        )
        return PrefillPart(len(item.new_token_ids), *sizes)

    def _judge_hidden(
        self, s: EngineSession, call: VerifyCall, item: ForwardItem, out: ForwardOutput
    ) -> VerifyOutcome:
        """A hidden-state rule's verification: a verdict, or a request for the draft's
        hidden states (the pass is kept, nothing is committed); :class:`RuleFailed` when
        the rule raises."""
        assert s.hidden_rule is not None
        rows = logit_hidden_rows(item, out)
        first_row = first_returned_position(s.last_round is not None, call.prefix_len)
        returned = first_row if s.spec.return_hidden else None
        try:
            judged = judge_pass(s.hidden_rule, call, s.spec.sampling, item, out, rows, returned)
        except Exception as exc:
            raise RuleFailed(rule_failure(s, exc)) from exc
        if isinstance(judged, Verdict):
            return self._apply(s, call, item, out, judged)
        # the session holds the kept pass's KV (cropped from there when decided), in the LRU
        # budget like any cache; without a prefix cache none is kept
        s.pending = judged
        s.kv, s.kv_len = out.kv, item.kv_len + len(item.new_token_ids)
        if not self._prefix_cache:
            s.kv, s.kv_len = None, 0
        self._relist(s)
        s.last_used_s = self._clock()
        return waiting_outcome(judged)

    def _decide_followup(self, s: EngineSession, call: VerifyCall) -> VerifyOutcome | RequestError:
        """The verdict of a kept pass, now that ``call`` brought the hidden states."""
        pending, rule = s.pending, s.hidden_rule
        if pending is None or rule is None or not self._holds(s):
            message = f"session {call.session_id!r} changed before verification"
            return RequestError(ErrorCode.FAILED_PRECONDITION, message)
        if pending.num_hidden_evicted:  # the reply cannot carry the rows: nothing committed
            s.pending, s.kv, s.kv_len = None, None, 0  # its KV was evicted with the rows
            return evicted_followup_error(pending)
        try:
            judged = decide_followup(rule, s.spec.verification_rule, pending, s.spec.sampling, call)
        except Exception as exc:  # the session keeps its waiting pass; the others go on
            self._relist(s)
            return RequestError(ErrorCode.INTERNAL, rule_failure(s, exc))
        if isinstance(judged, RequestError):
            return judged
        s.pending = None
        self._lru.pop(call.session_id, None)  # _apply puts a kept cache back, newest
        out = replace(pending.out, kv=s.kv)  # None when the budget evicted the pass's KV
        return self._apply(s, pending.call, pending.item, out, judged)

    def _apply(
        self,
        s: EngineSession,
        call: VerifyCall,
        item: ForwardItem,
        out: ForwardOutput,
        judged: Verdict | None = None,
    ) -> VerifyOutcome:
        if judged is None:
            rows = processed_rows(out.rows, s.spec, s.tokens, call, self.backend.eos_token_ids)
            judged = s.rule.verdict(call, s.spec.sampling, rows, s.rng)
        keep_cache = self._prefix_cache and self._holds(s)
        outcome = commit_verdict(s, call, item, out, judged, self.backend, keep_cache)
        s.last_used_s = self._clock()
        block = VerifyCall(call.session_id, call.prefix_len, call.draft_token_ids,
                           draft_parents=call.draft_parents)  # fmt: skip
        self._tally.count_round(s, outcome)  # lossy sessions, accepted mismatches
        self._store_round(s, block, outcome)  # a retry of this round gets it again
        return outcome
