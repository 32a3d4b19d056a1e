"""The drafter loop's sessions on hand-built rounds (no model, the generation of
:mod:`tests.runtime.edge.round_loop_setup`): a lost session reopened with the committed
tokens, what a reconnect does not survive, the first open retried only when asked, and
which sessions a refused open, a failed round or a failing generation closes."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.core.types import SamplingParams
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.edge.reconnect import reopened_seed
from edgespec.runtime.errors import ErrorCode, RequestError
from tests.runtime.edge.round_loop_setup import GREEDY, OPTIONS, OUTPUT, PROMPT
from tests.runtime.edge.round_loop_setup import run_loop as _run
from tests.runtime.round_fakes import Clock, Drafter, FeatureDrafter, Recording, Verifier


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
    assert reopened.num_prior_output_tokens == 3  # the penalties count them as output
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


def test_a_reopening_is_told_with_its_error_the_tokens_kept_and_its_retry_time() -> None:
    """``edgespec draft`` was silent for up to --retry-timeout-s while it reopened a lost
    session (DraftOptions.on_reconnect: it now says so)."""
    import dataclasses

    clock = Clock()
    verifier = Verifier(clock)
    told: list[tuple[ErrorCode, int, float]] = []

    def lose_session(tokens: tuple[int, ...]) -> None:
        if tokens == (6, 7, 8):
            verifier.failures = [ErrorCode.UNAVAILABLE]

    options = dataclasses.replace(
        OPTIONS, on_reconnect=lambda error, kept, retry_s: told.append((error.code, kept, retry_s))
    )
    result = generate(verifier, Drafter(clock), PROMPT, GREEDY, options, None, lose_session,
                      clock=clock)  # fmt: skip
    assert result.output_token_ids == OUTPUT
    assert told == [(ErrorCode.UNAVAILABLE, 3, OPTIONS.retry_timeout_s)]
