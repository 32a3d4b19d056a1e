"""One open session of the verification engine: :class:`EngineSession` (spec, bound rule,
committed tokens, KV cache, last committed round, a pass waiting for its SH follow-up) and
what it holds against the engine's token budget (:func:`held_tokens`: its KV tokens and
its kept hidden rows, a row a token), which :func:`evict` drops; what a pass may change in
it (:class:`RoundStart`, put back when settling the pass fails) and whether a queued call
can still run (:func:`unrunnable_call`). The table of sessions, in LRU order under that
budget, is :mod:`edgespec.runtime.server.engine_sessions`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.policies.contracts import PolicyContractError
from edgespec.runtime.backends.base import KVState
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyOutcome
from edgespec.runtime.server.hidden_followup import (
    PendingHidden,
    failed_followup_error,
    pending_rows,
    without_hidden_rows,
)
from edgespec.runtime.server.verification import HiddenStateRule, VerificationRule


@dataclass(slots=True)
class EngineSession:
    """One open session: its spec and bound rule, the committed ``tokens`` and the KV
    cache of ``tokens[:kv_len]`` (``kv`` is ``None`` when it holds none); ``serial``: this
    open's number, unique in the table's life; ``last_round``: the block (prefix, tokens,
    tree) and outcome of its last committed round."""

    spec: SessionSpec
    rule: VerificationRule
    tokens: list[int]
    rng: np.random.Generator
    last_used_s: float
    serial: int
    kv: KVState | None = None
    kv_len: int = 0
    was_evicted: bool = False
    finished: bool = False
    num_output_tokens: int = 0
    in_flight: bool = field(default=False)
    hidden_rule: HiddenStateRule | None = None  # the rule, when it reads hidden states
    pending: PendingHidden | None = None  # a verification waiting for its follow-up
    last_round: tuple[VerifyCall, VerifyOutcome] | None = None
    rows_evicted: int = 0  # the hidden rows of last_round's outcome the budget dropped
    # between the passes of a prefill in parts (edgespec.runtime.server.prefill_parts): the
    # first part's position, and the parts' hidden rows of a return_hidden session
    prefill_start: int | None = None
    prefill_rows: npt.NDArray[np.float32] | None = None
    # the prompt's log-probabilities scored so far, when it asks for them
    # (edgespec.runtime.server.prompt_logprobs)
    prompt_scores: list[TokenLogprobs] | None = None


def stored_rows(s: EngineSession) -> int:
    """The hidden rows ``s``'s kept outcome, waiting pass and prefill parts hold (counted
    against the budget)."""
    hidden = None if s.last_round is None else s.last_round[1].target_hidden
    kept = 0 if hidden is None else int(hidden.shape[0])
    parts = 0 if s.prefill_rows is None else int(s.prefill_rows.shape[0])
    return kept + parts + (0 if s.pending is None else pending_rows(s.pending))


def held_tokens(s: EngineSession) -> int:
    """What ``s`` holds against the token budget: its KV tokens and hidden rows."""
    return s.kv_len + stored_rows(s)


def evict(s: EngineSession, budget: int) -> bool:
    """Drop ``s``'s KV and kept hidden rows (evicted under ``budget`` tokens): a waiting
    pass keeps what decides its follow-up, a kept outcome its block, a prefill in parts
    nothing. ``True`` when it held
    KV (an eviction: its next verification re-prefills)."""
    had_kv = s.kv is not None
    # what the waiting pass alone holds, as the same block sent again would: its KV and
    # its own rows (not the rows kept of the session's last round, which go now)
    pass_held = s.kv_len + (0 if s.pending is None else pending_rows(s.pending))
    if had_kv:
        s.kv, s.kv_len, s.was_evicted = None, 0, True
    s.prefill_start, s.prefill_rows = None, None  # a prefill in parts starts again
    if s.pending is not None and pending_rows(s.pending):
        s.pending = without_hidden_rows(s.pending, pass_held, budget)
    if s.last_round is not None and (rows := stored_rows(s)):
        block, outcome = s.last_round
        s.last_round = (block, dataclasses.replace(outcome, target_hidden=None))
        s.rows_evicted = rows
    return had_kv


@dataclass(frozen=True, slots=True)
class RoundStart:
    """What a verification's pass can change in a session, as it was before: put back
    (:meth:`restore`) when settling the pass fails for that session alone."""

    num_tokens: int
    num_output_tokens: int
    finished: bool
    prompt_scores: list[TokenLogprobs] | None
    rng_state: Mapping[str, Any]
    had_kv: bool

    @classmethod
    def of(cls, s: EngineSession) -> RoundStart:
        return cls(len(s.tokens), s.num_output_tokens, s.finished, s.prompt_scores,
                   s.rng.bit_generator.state, s.kv is not None)  # fmt: skip

    def restore(self, s: EngineSession) -> None:
        """``s``'s committed tokens, counts and random stream as they were; its cache and
        any waiting pass or prefill part dropped (on a backend that extends a cache in
        place the pass has moved it on): its next verification re-prefills."""
        del s.tokens[self.num_tokens :]
        s.num_output_tokens, s.finished = self.num_output_tokens, self.finished
        s.prompt_scores = self.prompt_scores
        s.rng.bit_generator.state = self.rng_state
        s.kv, s.kv_len, s.was_evicted = None, 0, self.had_kv or s.was_evicted
        s.pending, s.prefill_start, s.prefill_rows = None, None, None


def unrunnable_call(
    call: VerifyCall, s: EngineSession | None, serial: int | None
) -> RequestError | None:
    """Why a queued ``call``, admitted for the session opened as number ``serial`` (``None``:
    the one open now), cannot run as the batch starts: its session is gone, was closed (a
    later open may have its id), finished or moved past ``call``'s prefix; ``None`` if it can."""
    if s is None:
        return RequestError(ErrorCode.NOT_FOUND, f"unknown session {call.session_id!r}")
    if serial is not None and s.serial != serial:
        message = f"session {call.session_id!r} was closed before this verification ran"
        return RequestError(ErrorCode.NOT_FOUND, message)
    if s.finished or call.prefix_len != len(s.tokens):
        message = f"session {call.session_id!r} changed before verification"
        return RequestError(ErrorCode.FAILED_PRECONDITION, message)
    return None


class RuleFailed(RuntimeError):
    """A session's verification rule raised on its pass (its message says which)."""


def rule_failure(s: EngineSession, exc: Exception) -> str:
    why = str(exc) if isinstance(exc, PolicyContractError) else repr(exc)  # says its head
    return f"verification rule {s.spec.verification_rule!r} failed: {why}"


def settle_failure(exc: Exception, followup: VerifyCall | None) -> RequestError:
    """A session's share of a batch that raised ``exc`` as it was settled, as its call is
    answered: ``INTERNAL`` (the same call may be sent again), a ``followup``'s ``ABORTED``
    (its waiting pass dropped: the block is to be sent again)."""
    why = f"verification failed after the target's pass: {exc!r}"
    if followup is not None:
        return failed_followup_error(followup, why)
    return RequestError(ErrorCode.INTERNAL, str(exc) if isinstance(exc, RuleFailed) else why)
