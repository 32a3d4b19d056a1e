"""The drafter loop's bookkeeping on hand-built rounds (no model): the exact calls sent,
round records, request record, window observations, reconnects and their error paths.

Prompt (5,), 7 new tokens, the draft wrong at its third token, the toy target of
:mod:`tests.runtime.round_fakes`: round 1 drafts 4 (γ 4), accepts 2, commits 6 7 8;
round 2 drafts 3 (γ capped at 7 − 3 − 1), commits 9 10 11; round 3 is a plain target
step (γ capped at 0), commits 12."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from edgespec.core.types import RequestRecord, RoundRecord, SamplingParams
from edgespec.policies.interfaces import WindowObservation, WindowPolicy
from edgespec.policies.stop_drafting import DraftStopPolicy
from edgespec.runtime.edge.drafter import DraftOptions, GenerationResult, generate
from edgespec.runtime.edge.reconnect import reopened_seed
from edgespec.runtime.edge.rounds import draft_rng, play_round
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from tests.runtime.round_fakes import (
    Clock,
    Drafter,
    FeatureDrafter,
    Recording,
    Verifier,
)

PROMPT = (5,)
GREEDY = SamplingParams(temperature=0.0, max_new_tokens=7, seed=3)
OUTPUT = (6, 7, 8, 9, 10, 11, 12)
OPTIONS = DraftOptions(session_id="s", slo_class="gold", retry_backoff_s=0.0)
SPEC = SessionSpec("s", "edge-0", PROMPT, GREEDY)


def _record(index: int, start: float, drafted: int, accepted: int, committed: int) -> RoundRecord:
    draft_s = 0.25 if drafted else 0.0
    return RoundRecord(
        request_id="s",
        round_index=index,
        start_s=start,
        end_s=start + draft_s + 1.0,
        draft_s=draft_s,
        uplink_s=0.3125,  # (1.0 − queue 0.125 − verify 0.25) / 2
        queue_s=0.125,
        verify_s=0.25,
        downlink_s=0.3125,
        num_drafted=drafted,
        num_accepted=accepted,
        num_committed=committed,
        batch_size=3,
    )


RECORDS = (_record(0, 0.0, 4, 2, 3), _record(1, 1.25, 3, 2, 3), _record(2, 2.5, 0, 0, 1))


def _run(
    verifier: Verifier,
    clock: Clock,
    drafter: Drafter | None = None,
    window: WindowPolicy | None = None,
    on_tokens: Callable[[tuple[int, ...]], None] | None = None,
    stop: DraftStopPolicy | None = None,
) -> GenerationResult:
    drafter = drafter if drafter is not None else Drafter(clock)
    return generate(
        verifier, drafter, PROMPT, GREEDY, OPTIONS, window, on_tokens, clock=clock, stop=stop
    )


def test_the_default_loop_sends_records_and_reports_exactly() -> None:
    clock = Clock()
    verifier = Verifier(clock)
    streamed: list[tuple[int, ...]] = []
    result = _run(verifier, clock, on_tokens=streamed.append)
    assert result.output_token_ids == OUTPUT
    assert streamed == [(6, 7, 8), (9, 10, 11), (12,)]
    calls = verifier.calls
    assert [c.prefix_len for c in calls] == [1, 4, 7]
    assert [c.draft_token_ids for c in calls] == [(6, 7, 15, 9), (9, 10, 18), ()]
    assert [c.draft_probs for c in calls] == [None, None, None]  # greedy sends no q
    assert [c.draft_s for c in calls] == [0.25, 0.25, 0.0]
    assert [c.network_s for c in calls] == [0.0, 0.625, 0.625]  # the last round's
    assert result.rounds == RECORDS
    assert result.request == RequestRecord(
        request_id="s",
        client_id="edge-0",
        slo_class="gold",
        server_id=0,
        arrival_s=0.0,
        first_token_s=1.25,
        finish_s=3.5,
        num_prompt_tokens=1,
        num_output_tokens=7,
        num_rounds=3,
        num_drafted=7,
        num_accepted=4,
        draft_s=0.5,
        network_s=1.875,
        queue_s=0.375,
        verify_s=0.75,
    )
    assert result.num_reconnects == 0
    assert verifier.closed == ["s"]
    assert [(s.return_hidden, s.slo_class) for s in verifier.specs] == [(False, "gold")]


def test_the_window_policy_sees_each_verdict() -> None:
    clock = Clock()
    policy = Recording()
    _run(Verifier(clock), clock, window=policy)

    def seen(acceptance: float, tpot: float) -> WindowObservation:
        return WindowObservation(4, acceptance, 2, 2, 0.625, tpot, False, pair="edge-0")

    first = WindowObservation(previous_gamma=0, recent_acceptance=None, pair="edge-0")
    # tpot: the first token came at 1.25; 3 then 6 committed at 1.25 then 2.5
    assert policy.seen == [first, seen(0.5, 0.0), seen(4 / 7, 0.25)]


@pytest.mark.parametrize("code", [ErrorCode.NOT_FOUND, ErrorCode.UNAVAILABLE])
def test_a_lost_session_is_reopened_with_the_committed_tokens(code: ErrorCode) -> None:
    clock = Clock()
    verifier = Verifier(clock)
    policy = Recording()

    def lose_session(tokens: tuple[int, ...]) -> None:
        if tokens == (6, 7, 8):  # round 2's verification fails, then one reopening
            verifier.failures = [code]
            verifier.open_failures = [ErrorCode.UNAVAILABLE]

    result = _run(verifier, clock, window=policy, on_tokens=lose_session)
    assert result.output_token_ids == OUTPUT
    assert result.num_reconnects == 1
    assert [s.session_id for s in verifier.specs] == ["s", "s#r1.1", "s#r1.2"]
    reopened = verifier.specs[2]
    assert reopened.prompt_token_ids == (5, 6, 7, 8)
    assert reopened.sampling == SamplingParams(0.0, max_new_tokens=4, seed=reopened_seed(3, 3))
    # the abandoned one too, and the failed reopening (its open may have reached the server)
    assert verifier.closed == ["s", "s#r1.1", "s#r1.2"]
    assert [c.session_id for c in verifier.calls] == ["s", "s", "s#r1.2", "s#r1.2"]
    assert len(policy.seen) == 4  # asked again for the round that did not run
    assert len(result.rounds) == 3


def test_a_refused_reopening_is_not_closed() -> None:
    clock = Clock()
    verifier = Verifier(clock)

    def lose_session(tokens: tuple[int, ...]) -> None:
        if tokens == (6, 7, 8):
            verifier.failures = [ErrorCode.NOT_FOUND]
            verifier.open_failures = [ErrorCode.RESOURCE_EXHAUSTED]

    with pytest.raises(RequestError) as info:
        _run(verifier, clock, on_tokens=lose_session)
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED
    assert verifier.closed == ["s"]  # the abandoned one; "s#r1.1" was refused, never opened


@pytest.mark.parametrize(
    ("failures", "open_failures", "timeout_s", "code", "message"),
    [
        ([ErrorCode.INVALID_ARGUMENT], [], 30.0, ErrorCode.INVALID_ARGUMENT, "scripted failure"),
        ([ErrorCode.UNAVAILABLE], [], 0.5, ErrorCode.UNAVAILABLE, "scripted failure"),
        ([ErrorCode.NOT_FOUND], [ErrorCode.NOT_FOUND], 30.0, ErrorCode.NOT_FOUND, "cannot open"),
    ],
)
def test_what_a_reconnect_does_not_survive(
    failures: list[ErrorCode],
    open_failures: list[ErrorCode],
    timeout_s: float,
    code: ErrorCode,
    message: str,
) -> None:
    clock = Clock()
    verifier = Verifier(clock)
    verifier.failures = failures
    verifier.open_failures = open_failures[:]
    options = DraftOptions(session_id="s", retry_timeout_s=timeout_s, retry_backoff_s=0.0)
    with pytest.raises(RequestError) as info:
        generate(verifier, Drafter(clock), PROMPT, GREEDY, options, clock=clock)
    assert info.value.code is code
    assert info.value.message.startswith(message)


@pytest.mark.parametrize("retry", [False, True])
def test_the_first_open_is_retried_while_the_server_is_down_only_when_asked(retry: bool) -> None:
    clock = Clock()
    verifier = Verifier(clock)
    verifier.first_open_failures = [ErrorCode.UNAVAILABLE, ErrorCode.UNAVAILABLE]
    options = DraftOptions(session_id="s", retry_backoff_s=0.0, first_open_retry_s=retry * 30.0)
    if not retry:
        with pytest.raises(RequestError) as info:
            generate(verifier, Drafter(clock), PROMPT, GREEDY, options, clock=clock)
        assert (info.value.code, info.value.message) == (ErrorCode.UNAVAILABLE, "server down")
        assert verifier.closed == ["s"]  # an open that timed out may have opened it
        return
    result = generate(verifier, Drafter(clock), PROMPT, GREEDY, options, clock=clock)
    assert result.output_token_ids == OUTPUT
    assert [s.session_id for s in verifier.specs] == ["s", "s", "s"]  # same session, 3 tries
    assert result.num_reconnects == 0


@pytest.mark.parametrize(
    ("code", "closed"),
    [
        (ErrorCode.UNAVAILABLE, ["s"]),  # lost answer: the open may have happened
        (ErrorCode.CANCELLED, ["s"]),
        (ErrorCode.INTERNAL, ["s"]),
        (ErrorCode.INVALID_ARGUMENT, []),  # "already exists": another client's session
        (ErrorCode.RESOURCE_EXHAUSTED, []),
        (ErrorCode.PERMISSION_DENIED, []),
    ],
)
def test_a_refused_first_open_closes_nothing(code: ErrorCode, closed: list[str]) -> None:
    """A refused open left the server as it was; closing its id closed whoever held it."""
    clock = Clock()
    verifier = Verifier(clock)
    verifier.first_open_failures = [code]
    options = DraftOptions(session_id="s", retry_backoff_s=0.0)
    with pytest.raises(RequestError) as info:
        generate(verifier, Drafter(clock), PROMPT, GREEDY, options, clock=clock)
    assert info.value.code is code
    assert verifier.closed == closed


@pytest.mark.parametrize("code", [ErrorCode.UNAVAILABLE, ErrorCode.PERMISSION_DENIED])
def test_a_server_gone_at_the_final_close_keeps_the_output(code: ErrorCode) -> None:
    clock = Clock()
    verifier = Verifier(clock)
    verifier.close_failures = [code]
    if code is ErrorCode.PERMISSION_DENIED:  # not a server gone: the caller hears of it
        with pytest.raises(RequestError, match="cannot close"):
            _run(verifier, clock)
        return
    assert _run(verifier, clock).output_token_ids == OUTPUT


def test_a_stop_predictor_needs_a_stopping_drafter_before_any_session() -> None:
    clock = Clock()
    verifier = Verifier(clock)
    with pytest.raises(ValueError, match="^Drafter cannot draft with a stop predictor"):
        _run(verifier, clock, stop=_NeverStop())
    assert verifier.specs == []


class _NeverStop:
    def keep_mask(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        return np.ones(features.shape[0], dtype=bool)


def test_an_empty_block_counts_no_passes_only_with_a_stop_predictor() -> None:
    clock = Clock()
    verifier = Verifier(clock)
    verifier.open(SPEC)
    rng = np.random.default_rng(0)
    drafter = Drafter(clock)
    plain = play_round(verifier, drafter, "s", PROMPT, 0, GREEDY, rng, 0.0, clock)
    assert plain.num_passes is None
    assert plain.call.draft_token_ids == ()
    stop = _NeverStop()
    stopped = play_round(verifier, drafter, "s", (5, 6), 0, GREEDY, rng, 0.0, clock, stop)
    assert stopped.num_passes == 0
    assert clock.t == 2.0  # two verifications, no drafting


@pytest.mark.parametrize("wants", [True, False])
def test_a_feature_draft_observes_the_hidden_rows_timed_as_drafting(wants: bool) -> None:
    clock = Clock()
    verifier = Verifier(clock)
    drafter = FeatureDrafter(clock, wants_hidden=wants)
    result = _run(verifier, clock, drafter=drafter)
    assert result.output_token_ids == OUTPUT
    assert [s.return_hidden for s in verifier.specs] == [wants]
    if not wants:
        assert drafter.observed == []
        assert result.rounds == RECORDS
        return
    assert drafter.observed == [(1, 3), (4, 3), (7, 1)]  # (start, rows) per verification
    assert [r.draft_s for r in result.rounds] == [0.75, 0.75, 0.5]
    assert [r.start_s for r in result.rounds] == [0.0, 1.75, 3.5]


def test_the_draft_stream_is_neither_the_verifiers_nor_another_runs() -> None:
    verifier_rng = np.random.default_rng(7)  # the engine's: the session seed itself
    assert draft_rng(7).random() != verifier_rng.random()
    assert draft_rng(7, 0).random() != draft_rng(7, 1).random()  # one per fused run
    assert draft_rng(7, 1).random() == draft_rng(7, 1).random()


def test_short_blocks_count_what_was_sent_and_network_time_is_never_negative() -> None:
    clock = Clock()
    verifier = Verifier(clock)
    verifier.queue_s = 2.0  # more than the 1.0 s the round took: clock skew
    drafter = Drafter(clock)
    drafter.max_block = 1  # fewer tokens than γ
    result = _run(verifier, clock, drafter=drafter)
    assert result.output_token_ids == OUTPUT
    assert drafter.gammas == [4, 4, 2]
    assert [r.num_drafted for r in result.rounds] == [1, 1, 1, 0]
    assert [(r.uplink_s, r.downlink_s) for r in result.rounds] == [(0.0, 0.0)] * 4


def test_a_feature_draft_reopens_with_hidden_rows() -> None:
    clock = Clock()
    verifier = Verifier(clock)

    def lose_session(tokens: tuple[int, ...]) -> None:
        if tokens == (6, 7, 8):
            verifier.failures = [ErrorCode.UNAVAILABLE]

    drafter = FeatureDrafter(clock, wants_hidden=True)
    result = _run(verifier, clock, drafter=drafter, on_tokens=lose_session)
    assert result.output_token_ids == OUTPUT
    assert [(s.session_id, s.return_hidden) for s in verifier.specs] == [
        ("s", True),
        ("s#r1.1", True),
    ]


@pytest.mark.parametrize(
    ("code", "closed"),
    [
        (ErrorCode.INVALID_ARGUMENT, ["s"]),  # refused for good: the server still holds it
        (ErrorCode.FAILED_PRECONDITION, ["s"]),
        (ErrorCode.RESOURCE_EXHAUSTED, ["s"]),
        (ErrorCode.ABORTED, ["s"]),  # past retry_timeout_s (below): still held
        (ErrorCode.UNAVAILABLE, []),  # past retry_timeout_s: unreachable, nothing to close
        (ErrorCode.NOT_FOUND, []),  # the server lost it already
    ],
)
def test_a_round_that_fails_the_generation_closes_a_session_the_server_holds(
    code: ErrorCode, closed: list[str]
) -> None:
    """A refused round used to leave its session open: its KV waited for the server's idle
    timeout (300 s by default) after the generation had failed."""
    clock = Clock()
    verifier = Verifier(clock)
    verifier.failures = [code]
    options = DraftOptions(session_id="s", retry_backoff_s=0.0, retry_timeout_s=0.0)
    with pytest.raises(RequestError) as info:
        generate(verifier, Drafter(clock), PROMPT, GREEDY, options, clock=clock)
    assert (info.value.code, info.value.message) == (code, "scripted failure")
    assert verifier.closed == closed


class _FailingDrafter(Drafter):
    """Its second draft fails (a draft backend's error, or Ctrl-C in the middle)."""

    def __init__(self, clock: Clock, error: BaseException) -> None:
        super().__init__(clock)
        self.error = error

    def propose(self, *args: Any, **kwargs: Any) -> Any:
        if self.gammas:
            raise self.error
        return super().propose(*args, **kwargs)


@pytest.mark.parametrize("error", [RuntimeError("draft backend failed"), KeyboardInterrupt()])
def test_a_generation_failing_here_closes_its_session(error: BaseException) -> None:
    """The session stayed open on the server, its KV held until the idle timeout."""
    clock = Clock()
    verifier = Verifier(clock)
    with pytest.raises(type(error)):
        generate(verifier, _FailingDrafter(clock, error), PROMPT, GREEDY, OPTIONS, clock=clock)
    assert len(verifier.calls) == 1  # the first round was verified
    assert verifier.closed == ["s"]
