"""A fused run's rounds are its session's, and its session takes no other: a session
closed while its run drafts and opened again under the same id is another, which the run
never verifies on (the run went on on the new session, its rounds admitted by id, played
it to its end and streamed its tokens to the old stream, and the new session's client was
told it had finished); a client's Verify while the run holds the session is refused (its
round committed, and the run then died naming 'another draft block'), and the device's
round right after the run's last chunk is taken."""

from __future__ import annotations

from typing import Any

import pytest

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedRound, SessionSpec, VerifyCall
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.server.test_fused_one_run_per_session import (
    GREEDY,
    PROMPT,
    _one_round,
    held_run,
)


def test_a_session_closed_and_opened_again_during_its_fused_run_is_not_the_runs(
    target: TransformersTarget, draft_model: Any
) -> None:
    with held_run(target, draft_model) as (_, verifier, finish):
        verifier.close("s")
        verifier.open(SessionSpec("s", "x", PROMPT, GREEDY))  # the same spec: another session
        old = finish()
        assert isinstance(old, RequestError), old
        assert (old.code, old.message) == (
            ErrorCode.NOT_FOUND,
            "session 's' was closed during this fused run: its rounds end here",
        )
        reply = verifier.verify(VerifyCall("s", len(PROMPT), ()))  # the new session's own
        first = target_greedy_decode(target, PROMPT, 1)
        assert reply.outcome.committed_token_ids == first


def test_a_verify_while_a_fused_run_holds_the_session_is_refused(
    target: TransformersTarget, draft_model: Any
) -> None:
    with held_run(target, draft_model) as (_, verifier, finish):
        with pytest.raises(RequestError) as info:
            verifier.verify(VerifyCall("s", len(PROMPT), ()))
        assert (info.value.code, info.value.message) == (
            ErrorCode.FAILED_PRECONDITION,
            "session 's' has a fused run in progress: its rounds are the run's until its last "
            "chunk",
        )
        only = finish()
        assert isinstance(only, FusedRound), only
        tokens = list(only.reply.outcome.committed_token_ids)
        for _ in range(2):  # each run's last chunk frees the session for the next round
            prefix = len(PROMPT) + len(tokens)
            tokens += _one_round(verifier, "s", prefix).reply.outcome.committed_token_ids
            prefix = len(PROMPT) + len(tokens)
            tokens += verifier.verify(VerifyCall("s", prefix, ())).outcome.committed_token_ids
        assert tuple(tokens) == target_greedy_decode(target, PROMPT, len(tokens))
