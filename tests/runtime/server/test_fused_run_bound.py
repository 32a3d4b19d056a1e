"""A fused run's rounds are its session's: a session closed while its run drafts and
opened again under the same id is another, which the run never verifies on. The run went
on on the new session (its rounds admitted by id), played it to its end and streamed its
tokens to the old stream, and the new session's client was told it had finished."""

from __future__ import annotations

import threading
from typing import Any

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import FusedRound, SessionSpec, VerifyCall
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.conftest import start_server
from tests.runtime.server.test_fused_one_run_per_session import (
    GREEDY,
    PROMPT,
    WAIT_S,
    _Book,
    _one_round,
)


def test_a_session_closed_and_opened_again_during_its_fused_run_is_not_the_runs(
    target: TransformersTarget, draft_model: Any
) -> None:
    book = _Book(draft_model)
    server = start_server(target, book.factory)
    address = f"127.0.0.1:{server.port}"
    ran: list[FusedRound | BaseException] = []

    def run() -> None:
        try:
            ran.append(_one_round(RemoteVerifier(address), "s"))
        except BaseException as exc:  # surfaced by the assertions below
            ran.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    try:
        verifier = RemoteVerifier(address)
        verifier.open(SessionSpec("s", "x", PROMPT, GREEDY))
        thread.start()
        assert book.entered.wait(WAIT_S), "the run never drafted"
        verifier.close("s")
        verifier.open(SessionSpec("s", "x", PROMPT, GREEDY))  # the same spec: another session
        book.gate.set()
        thread.join(WAIT_S)
        (old,) = ran
        assert isinstance(old, RequestError), old
        assert (old.code, old.message) == (
            ErrorCode.NOT_FOUND,
            "session 's' was closed during this fused run: its rounds end here",
        )
        reply = verifier.verify(VerifyCall("s", len(PROMPT), ()))  # the new session's own
        first = target_greedy_decode(target, PROMPT, 1)
        assert reply.outcome.committed_token_ids == first
    finally:
        book.gate.set()
        if thread.is_alive():
            thread.join(WAIT_S)
        server.stop(grace_s=0)
