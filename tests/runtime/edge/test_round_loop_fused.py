"""The drafter loop around a fused run, and the ledger's edge cases, on hand-built rounds
(no model; :mod:`tests.runtime.round_fakes`).

Prompt (5,), 10 new tokens. The device's policy answers fused γ 4; the server's run has
two rounds (blocks 6 7 20 and 9 10: commits 6 7 8, then 9 10 11) and hands back γ 2 with
its history; the device drafts 12 13 (commits 12 13 14), consults its policy again and
ends with a plain target step (15)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from edgespec.core.types import RoundRecord, SamplingParams
from edgespec.policies.history_snapshot import HistorySnapshot
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.edge.ledger import Ledger
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedCall, FusedRound, FusedRunEnd, SessionSpec
from tests.runtime.round_fakes import (
    Clock,
    Drafter,
    FeatureDrafter,
    FusedVerifier,
    Recording,
    StatefulRecording,
    Verifier,
)

PROMPT = (5,)
SAMPLING = SamplingParams(temperature=0.0, max_new_tokens=10)
OPTIONS = DraftOptions(session_id="s", retry_backoff_s=0.0)
FUSED = WindowDecision(4, fused=True)
SERVER_HISTORY = HistorySnapshot(
    recent=((3, 2), (2, 2)),
    num_rounds=2,
    gamma=4,
    last_num_accepted=2,
    num_committed_total=6,
    queue_depth=2,
    network_s=0.75,
    fused=True,
    first_token_age_s=1.0,
    window_state=(1.0, 2.0),
)


def _fused(
    policy: Recording, ends: list[FusedRunEnd], runs: list[list[tuple[int, ...]]] | None = None
) -> tuple[GenerationResult, FusedVerifier]:
    clock = Clock()
    verifier = FusedVerifier(clock)
    verifier.runs = runs if runs is not None else [[(6, 7, 20), (9, 10)]]
    verifier.ends = ends
    result = generate(
        verifier, Drafter(clock), PROMPT, SAMPLING, OPTIONS, window=policy, clock=clock
    )
    return result, verifier


def _record(
    index: int, start: float, end: float, drafted: int, committed: int, fused: bool
) -> RoundRecord:
    if fused:  # 2.0 s from the last arrival: draft 0.5, queue 0.125, verify 0.25
        draft_s, uplink_s, downlink_s = 0.5, (0.5625 if index == 0 else 0.0), 0.0
        downlink_s = 1.125 - uplink_s
    else:  # 1.0 s after drafting: queue 0.125, verify 0.25
        draft_s, uplink_s, downlink_s = (0.25 if drafted else 0.0), 0.3125, 0.3125
    return RoundRecord(
        request_id="s",
        round_index=index,
        start_s=start,
        end_s=end,
        draft_s=draft_s,
        uplink_s=uplink_s,
        queue_s=0.125,
        verify_s=0.25,
        downlink_s=downlink_s,
        num_drafted=drafted,
        num_accepted=min(drafted, 2),
        num_committed=committed,
        batch_size=3,
        fused=fused,
    )


def test_a_fused_run_is_recorded_and_its_decision_and_history_taken_back() -> None:
    policy = StatefulRecording([FUSED])
    result, verifier = _fused(policy, [FusedRunEnd(WindowDecision(2), SERVER_HISTORY)])
    assert result.output_token_ids == tuple(range(6, 16))
    # the device's empty history went with its policy's state for pair "edge-0"
    history = HistorySnapshot(window_state=(6.0, 0.5))
    assert verifier.fused_calls == [FusedCall("s", 1, 4, history)]
    assert policy.restored == [("edge-0", (1.0, 2.0))]
    assert result.rounds == (
        _record(0, 0.0, 2.0, 3, 3, fused=True),
        _record(1, 2.0, 4.0, 2, 3, fused=True),
        _record(2, 4.0, 5.25, 2, 3, fused=False),
        _record(3, 5.25, 6.25, 0, 1, fused=False),
    )
    assert [c.prefix_len for c in verifier.calls] == [7, 10]
    assert [c.draft_token_ids for c in verifier.calls] == [(12, 13), ()]
    assert [c.network_s for c in verifier.calls] == [0.75, 0.625]  # the server's, then ours
    # consulted twice: before the fused run, and after the round the server decided; the
    # second time on the server's history (first token 1.0 s before 4.0, 9 tokens at 5.25)
    after = WindowObservation(2, 6 / 7, 2, 2, 0.625, (5.25 - 3.0) / 8, False, pair="edge-0")
    assert policy.seen == [WindowObservation(0, None, pair="edge-0"), after]
    assert result.request.first_token_s == 2.0
    assert result.request.network_s == 1.125 + 1.125 + 0.625 + 0.625


def test_a_fused_decision_needs_a_fused_verifier() -> None:
    clock = Clock()
    with pytest.raises(RequestError) as info:
        generate(Verifier(clock), Drafter(clock), PROMPT, SAMPLING, OPTIONS, Recording([FUSED]))
    assert info.value.code is ErrorCode.FAILED_PRECONDITION
    assert info.value.message == (
        "window policy Recording chose a fused round; verifier Verifier cannot run fused rounds"
    )


def test_a_fused_run_without_its_end_is_internal() -> None:
    with pytest.raises(RequestError) as info:
        _fused(Recording([FUSED]), [FusedRunEnd(None, SERVER_HISTORY)], runs=[[]])
    assert info.value.code is ErrorCode.INTERNAL
    assert info.value.message == "the fused run of session 's' ended without its end"


def test_a_refused_window_state_is_internal() -> None:
    bad = HistorySnapshot(num_rounds=1, window_state=(-1.0,))
    with pytest.raises(RequestError) as info:
        _fused(StatefulRecording([FUSED]), [FusedRunEnd(None, bad)])
    assert info.value.code is ErrorCode.INTERNAL
    assert info.value.message == (
        "the fused run of session 's' returned a window state that window policy "
        "StatefulRecording refuses: negative state (-1.0,)"
    )


def test_the_ledger_streams_and_times_only_committed_tokens() -> None:
    clock = Clock()
    verifier = Verifier(clock)
    spec = SessionSpec("s", "edge-0", PROMPT, SamplingParams(max_new_tokens=1))
    empty = verifier.verdict(spec, [9], 2, (10,))  # a spent budget commits nothing
    assert empty.outcome.committed_token_ids == ()
    streamed: list[tuple[int, ...]] = []
    feature = FeatureDrafter(clock, wants_hidden=True)  # no hidden rows come back
    ledger = Ledger("s", streamed.append, feature, clock, "p")
    assert ledger.commit(4, 1, empty, (0.0, 1.0, 0.25, 0.125, 0.375))
    assert (streamed, ledger.first_token_s, feature.observed) == ([], None, [])
    spec = SessionSpec("t", "edge-0", PROMPT, SamplingParams(max_new_tokens=1))
    assert ledger.commit(4, 0, verifier.verdict(spec, [], 1, ()), (1.0, 2.0, 0.0, 0.5, 0.5))
    assert (streamed, ledger.first_token_s, ledger.output) == ([(6,)], 2.0, [6])
    assert [r.round_index for r in ledger.rounds] == [0, 1]
    assert ledger.rounds[0].draft_s == 0.25
    assert ledger.history.observation(2.0) == WindowObservation(
        4, 1 / 1, 0, 2, 1.0, None, False, pair="p"
    )


class _LostAfterItsEnd(FusedVerifier):
    """A run whose one round commits 6 7 8 9 10 and ends the request (an EOS with budget
    left when ``eos``, else the budget reached), then its stream fails as a server killed
    before the call's status would."""

    def __init__(self, clock: Clock, eos: bool) -> None:
        super().__init__(clock)
        self.eos = eos

    def run_fused(self, call: FusedCall) -> Iterator[FusedRound]:
        output, spec = self.sessions[call.session_id]
        reply = self.verdict(spec, output, call.prefix_len, (6, 7, 8, 9))
        if self.eos:  # token 10 is the target's EOS here
            reply = replace(reply, outcome=replace(reply.outcome, finished=True))
        assert reply.outcome.finished and reply.outcome.committed_token_ids == (6, 7, 8, 9, 10)
        end = FusedRunEnd(None, HistorySnapshot((), 1, 4, 4, 5, 0, 0.0, True, None, ()))
        yield FusedRound(4, (6, 7, 8, 9), 0.5, reply, end)
        raise RequestError(ErrorCode.UNAVAILABLE, "Socket closed")


@pytest.mark.parametrize("eos", [True, False], ids=["eos", "budget"])
def test_a_run_lost_after_its_last_round_ended_the_request_is_whole(eos: bool) -> None:
    """The loop dropped the run's finished round and reconnected: after an EOS it decoded on
    past it (output 6..15), at the budget it failed (ValueError: max_new_tokens 0). An edge
    review found it."""
    clock = Clock()
    verifier = _LostAfterItsEnd(clock, eos)
    sampling = SamplingParams(temperature=0.0, max_new_tokens=10 if eos else 5)
    result = generate(verifier, Drafter(clock, wrong_at=99), PROMPT, sampling, OPTIONS,
                      window=Recording([FUSED]), clock=clock)  # fmt: skip
    assert (result.output_token_ids, result.num_reconnects) == ((6, 7, 8, 9, 10), 0)
    assert [spec.session_id for spec in verifier.specs] == ["s"]  # nothing reopened
