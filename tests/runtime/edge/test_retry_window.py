"""The reconnect window (``--retry-timeout-s``) counts from a round's last sending or
arrival, not its start: a fused run that streamed for longer than the window, or a round
resent for longer, then lost its session, is reopened and finishes (it was raised: a lost
generation, and past the progress budget a NoProgress saying "0 committed" after dozens);
and a fused run whose next round did not come in time is closed on the server when it is
given up (its chunk deadline was not taken for a call past its deadline: the session
stayed until the server's idle timeout). On the fake clock; an edge review found them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from edgespec.core.types import SamplingParams
from edgespec.policies.interfaces import WindowDecision
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, FusedRound, VerifyCall, VerifyReply
from tests.runtime.round_fakes import (
    FUSED_ROUND_S,
    VOCAB,
    Clock,
    Drafter,
    FusedVerifier,
    Recording,
    Verifier,
)

LOST = "the server cancelled the call (CANCELLED): it is stopping or restarting"
SILENT = "Deadline Exceeded: no chunk from the server within 30 s: the stream was cancelled"


class _LongRunThenFails(FusedVerifier):
    """Its first fused run streams ``num_rounds`` plain target steps (one token each,
    :data:`FUSED_ROUND_S` apart on the clock), then fails with ``failure`` ``silent_s``
    later."""

    def __init__(self, clock: Clock, num_rounds: int, failure: str, silent_s: float = 0.0) -> None:
        super().__init__(clock)
        self.num_rounds, self.failure, self.silent_s = num_rounds, failure, silent_s

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        self.fused_calls.append(call)
        output, spec = self.sessions[call.session_id]
        prefix = call.prefix_len
        for _ in range(self.num_rounds):
            self.clock.t += FUSED_ROUND_S
            reply = self.verdict(spec, output, prefix, ())
            prefix += len(reply.outcome.committed_token_ids)
            yield FusedRound(4, (), 0.5, reply, None)
        self.clock.t += self.silent_s
        raise RequestError(ErrorCode.UNAVAILABLE, self.failure)


def _fused(verifier: FusedVerifier, clock: Clock, retry_timeout_s: float) -> tuple[int, ...]:
    options = DraftOptions(session_id="s", retry_backoff_s=0.0, retry_timeout_s=retry_timeout_s)
    result = generate(verifier, Drafter(clock), (5,), SamplingParams(max_new_tokens=80), options,
                      window=Recording([WindowDecision(4, fused=True)]), clock=clock)  # fmt: skip
    return result.output_token_ids


@pytest.mark.parametrize(("retry_timeout_s", "num_rounds"), [(30.0, 20), (100.0, 35)])
def test_a_long_fused_run_that_loses_its_server_is_reopened(
    retry_timeout_s: float, num_rounds: int
) -> None:
    """20 rounds (40 s) against a 30 s window; 35 rounds (70 s) against the 60 s progress
    budget."""
    clock = Clock()
    verifier = _LongRunThenFails(clock, num_rounds, LOST)
    output = _fused(verifier, clock, retry_timeout_s)
    assert output == tuple(t % VOCAB for t in range(6, 86))  # the target's, run's and rest
    assert [spec.session_id for spec in verifier.specs] == ["s", "s#r1.1"]


def test_a_fused_run_given_up_on_a_silent_stream_closes_its_session() -> None:
    """The next round did not come within the call timeout (30 s), longer than the retry
    window (10 s): given up, and the session (the server alive) closed."""
    clock = Clock()
    verifier = _LongRunThenFails(clock, 3, SILENT, silent_s=30.0)
    with pytest.raises(RequestError) as info:
        _fused(verifier, clock, 10.0)
    assert info.value.message == SILENT
    assert verifier.closed == ["s"]


class _ResentThenLost(Verifier):
    """The first verification's ``num_late`` sendings each pass their deadline (1 s on the
    clock), then the session is lost (the server restarted)."""

    def __init__(self, clock: Clock, num_late: int) -> None:
        super().__init__(clock)
        self.num_late = num_late

    def verify(self, call: VerifyCall) -> VerifyReply:
        if self.num_late >= 0:
            self.calls.append(call)
            self.clock.t += 1.0
            self.num_late -= 1
            if self.num_late >= 0:
                raise RequestError(ErrorCode.UNAVAILABLE, "Deadline Exceeded")
            raise RequestError(ErrorCode.NOT_FOUND, "unknown session 's'")
        return super().verify(call)


def test_a_round_resent_longer_than_the_window_then_lost_is_reopened() -> None:
    clock = Clock()
    verifier = _ResentThenLost(clock, 31)
    options = DraftOptions(session_id="s", retry_backoff_s=0.0)  # window 30 s, budget 60 s
    result = generate(verifier, Drafter(clock), (5,), SamplingParams(max_new_tokens=7), options,
                      clock=clock)  # fmt: skip
    assert result.output_token_ids == (6, 7, 8, 9, 10, 11, 12)
    assert (result.num_resends, result.num_reconnects) == (31, 1)
