"""Scripted stand-ins for the drafter loop's collaborators (no model): a hand-advanced
clock, a drafter that follows the toy target but for one planted wrong token, and a
greedy verifier of that target that can fail on cue.

The toy target's next token after ``c`` is ``(c[-1] + 1) % VOCAB``. Drafting advances the
clock by :data:`DRAFT_S`, a verification by :data:`VERIFY_CALL_S` (of which the reply
says :data:`QUEUE_S` queued and :data:`VERIFY_S` verifying), a feature draft's observation
by :data:`OBSERVE_S`: every time in a record is exact in binary floating point."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from edgespec.core.types import VerifyResult
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.runtime.backends.base import DraftProposal
from edgespec.runtime.backends.draft_shaping import DraftShaping
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import (
    FusedCall,
    FusedRound,
    FusedRunEnd,
    SessionSpec,
    VerifyCall,
    VerifyOutcome,
    VerifyReply,
)

VOCAB = 50
DRAFT_S = 0.25
VERIFY_CALL_S = 1.0
QUEUE_S = 0.125
VERIFY_S = 0.25
OBSERVE_S = 0.5
BATCH_SIZE = 3
QUEUE_DEPTH = 2
HIDDEN = 2
FUSED_DRAFT_S = 0.5
FUSED_ROUND_S = 2.0


def target_next(token: int) -> int:
    return (token + 1) % VOCAB


class Clock:
    """Reads the time without advancing it; the fakes advance it."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class Drafter:
    """Drafts the target's own continuation except for a wrong token at ``wrong_at``;
    with ``wants_target_hidden`` it is a feature draft recording what it observes."""

    def __init__(self, clock: Clock, wrong_at: int = 2, wants_hidden: bool | None = None) -> None:
        self.clock = clock
        self.wrong_at = wrong_at
        self.max_block = VOCAB  # a shorter block than γ when set lower
        self.gammas: list[int] = []
        self.observed: list[tuple[int, int]] = []  # (start_pos, number of rows)
        self._wants = wants_hidden

    def propose(
        self,
        context: Sequence[int],
        gamma: int,
        temperature: float,
        rng: np.random.Generator,
        shaping: DraftShaping | None = None,
    ) -> DraftProposal:
        self.clock.t += DRAFT_S
        self.gammas.append(gamma)
        tokens, last = [], context[-1]
        for i in range(gamma):
            last = target_next(last)
            tokens.append((last + 7) % VOCAB if i == self.wrong_at else last)
        probs = np.zeros((gamma, VOCAB), dtype=np.float32)
        probs[np.arange(gamma), tokens] = 1.0
        return DraftProposal(tuple(tokens[: self.max_block]), probs[: self.max_block])

    def reset(self) -> None:
        pass


class FeatureDrafter(Drafter):
    @property
    def wants_target_hidden(self) -> bool:
        return bool(self._wants)

    def observe_target_hidden(self, start_pos: int, rows: npt.NDArray[np.float32]) -> None:
        self.clock.t += OBSERVE_S
        self.observed.append((start_pos, rows.shape[0]))


class Verifier:
    """Greedy verification against the toy target. ``failures``: error codes the next
    verify calls raise (one each, advancing the clock a verification's time);
    ``open_failures`` the same for reopening sessions, ``first_open_failures`` for the
    first opening, ``close_failures`` for closing."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.specs: list[SessionSpec] = []
        self.calls: list[VerifyCall] = []
        self.closed: list[str] = []
        self.failures: list[ErrorCode] = []
        self.open_failures: list[ErrorCode] = []
        self.first_open_failures: list[ErrorCode] = []
        self.close_failures: list[ErrorCode] = []
        self.sessions: dict[str, tuple[list[int], SessionSpec]] = {}
        self.queue_s = QUEUE_S  # what replies claim

    def open(self, spec: SessionSpec) -> None:
        self.specs.append(spec)
        if self.first_open_failures and not self.sessions:
            raise RequestError(self.first_open_failures.pop(0), "server down")
        if self.open_failures and len(self.specs) > 1:  # reopenings only
            code = self.open_failures.pop(0)
            raise RequestError(code, f"cannot open {spec.session_id!r}")
        self.sessions[spec.session_id] = ([], spec)

    def close(self, session_id: str) -> None:
        if self.close_failures:
            raise RequestError(self.close_failures.pop(0), "cannot close")
        self.closed.append(session_id)
        self.sessions.pop(session_id, None)

    def verify(self, call: VerifyCall) -> VerifyReply:
        self.calls.append(call)
        self.clock.t += VERIFY_CALL_S
        if self.failures:
            raise RequestError(self.failures.pop(0), "scripted failure")
        output, spec = self.sessions[call.session_id]
        reply = self.verdict(spec, output, call.prefix_len, call.draft_token_ids)
        return reply

    def verdict(
        self, spec: SessionSpec, output: list[int], prefix_len: int, draft: tuple[int, ...]
    ) -> VerifyReply:
        """Verify ``draft`` after the session's committed tokens; commit the verdict."""
        committed = len(spec.prompt_token_ids) + len(output)
        if prefix_len != committed:
            raise RequestError(ErrorCode.INVALID_ARGUMENT, f"prefix_len {prefix_len}")
        expected = target_next((*spec.prompt_token_ids, *output)[-1])
        accepted: list[int] = []
        for token in draft:
            if token != expected:
                break
            accepted.append(token)
            expected = target_next(token)
        budget = spec.sampling.max_new_tokens - len(output)
        new = (*accepted, expected)[:budget]
        output.extend(new)
        result = VerifyResult(
            num_drafted=len(draft),
            num_accepted=len(accepted),
            first_rejection=None if len(accepted) == len(draft) else len(accepted),
            extra_token=expected,
            accepted_token_ids=tuple(accepted),
        )
        hidden = np.ones((len(accepted) + 1, HIDDEN), np.float32) if spec.return_hidden else None
        outcome = VerifyOutcome(
            result,
            new,
            len(output) >= spec.sampling.max_new_tokens,
            len(accepted) + 1,
            target_hidden=hidden,
            target_hidden_start=prefix_len,
        )
        return VerifyReply(outcome, self.queue_s, VERIFY_S, BATCH_SIZE, QUEUE_DEPTH)


class FusedVerifier(Verifier):
    """A verifier that also runs fused runs: ``runs`` scripts each run as its draft blocks
    (γ 4, each drafted in :data:`FUSED_DRAFT_S` and arriving :data:`FUSED_ROUND_S` after
    the previous one) and ``ends`` how each ends (on its last round)."""

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self.fused_calls: list[FusedCall] = []
        self.runs: list[list[tuple[int, ...]]] = []
        self.ends: list[FusedRunEnd] = []

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        self.fused_calls.append(call)
        output, spec = self.sessions[call.session_id]
        blocks, end = self.runs.pop(0), self.ends.pop(0)
        prefix_len = call.prefix_len
        for i, block in enumerate(blocks):
            self.clock.t += FUSED_ROUND_S
            reply = self.verdict(spec, output, prefix_len, block)
            prefix_len += len(reply.outcome.committed_token_ids)
            last = i == len(blocks) - 1
            yield FusedRound(4, block, FUSED_DRAFT_S, reply, end if last else None)


class Recording:
    """A window policy answering ``decisions`` in turn (then γ 4), recording what it saw;
    with ``state`` it keeps per-pair state (a PairStateWindow)."""

    def __init__(self, decisions: Sequence[WindowDecision] = ()) -> None:
        self.decisions = list(decisions)
        self.seen: list[WindowObservation] = []

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        self.seen.append(obs)
        return self.decisions.pop(0) if self.decisions else WindowDecision(4)


class StatefulRecording(Recording):
    def __init__(self, decisions: Sequence[WindowDecision] = ()) -> None:
        super().__init__(decisions)
        self.restored: list[tuple[str, tuple[float, ...]]] = []

    def pair_state(self, pair: str) -> tuple[float, ...]:
        return (float(len(pair)), 0.5)

    def restore_pair_state(self, pair: str, state: tuple[float, ...]) -> None:
        if any(x < 0 for x in state):
            raise ValueError(f"negative state {state}")
        self.restored.append((pair, state))
