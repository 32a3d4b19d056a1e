"""A retried open is answered as the open it retries: a second OpenSession after a lost
reply opens nothing more, only an identical open by the same owner counts as a retry, and
a centralized generate adopts no unused session of its id."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.edge.reconnect import open_retrying
from edgespec.runtime.errors import ErrorCode
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.wire.grpc_client import RemoteVerifier
from edgespec.runtime.wire.inprocess import target_greedy_decode
from tests.runtime.bad_cases import GREEDY, PROMPT, raises_request_error
from tests.runtime.conftest import ServerFactory
from tests.runtime.server.gated_service import gated_service as _service

N = len(PROMPT)


def test_a_retried_open_whose_first_reply_was_lost_succeeds(
    make_server: ServerFactory, target: TransformersTarget
) -> None:
    """The first OpenSession's reply comes after the client's deadline; open_retrying's
    second attempt (the same spec, same client) is answered as that open, once."""
    server = make_server()
    service = server.service
    assert service is not None
    open_session = service.engine.open_session
    opened: list[SessionSpec] = []

    def late(spec: SessionSpec) -> None:
        opened.append(spec)
        if len(opened) == 1:
            time.sleep(0.6)
        open_session(spec)

    service.engine.open_session = late  # type: ignore[method-assign]
    verifier = RemoteVerifier(f"127.0.0.1:{server.port}", timeout_s=0.3)
    spec = SessionSpec("s1", "c", PROMPT, SamplingParams(max_new_tokens=4))
    open_retrying(verifier, spec, time.monotonic, 5.0, 0.05)
    assert opened == [spec]  # the retry opened nothing more
    assert (verifier.stats().num_sessions, service.metrics().num_sessions_opened) == (1, 1)
    reply = verifier.verify(VerifyCall("s1", N, ()))
    assert reply.outcome.committed_token_ids == target_greedy_decode(target, PROMPT, 1)
    raises_request_error(  # once it has verified a round, an open is no retry
        ErrorCode.INVALID_ARGUMENT, "session 's1' already exists", verifier.open, spec
    )


def test_only_an_identical_open_by_the_same_owner_is_a_retry(target: TransformersTarget) -> None:
    service, _ = _service(target)
    spec = SessionSpec("s", "x", PROMPT, GREEDY)
    service.open_session(spec, owner="tok")
    service.open_session(spec, owner="tok")
    exists = "session 's' already exists"
    other_prompt = SessionSpec("s", "x", (1, 2), GREEDY)
    for again, owner in ((other_prompt, "tok"), (spec, "other-tok")):
        raises_request_error(ErrorCode.INVALID_ARGUMENT, exists, service.open_session, again, owner)
    assert service.stats().num_sessions == 1


def test_a_centralized_generate_does_not_adopt_an_unused_session_of_its_id(
    target: TransformersTarget,
) -> None:
    """Generate opens a session of its own and closes it at its end: an open session of the
    same id and spec, not yet verified, looked like a retry of its open, was adopted and
    then closed under its owner."""
    service, _ = _service(target)
    spec = SessionSpec("s", "x", PROMPT, GREEDY)
    service.open_session(spec, owner="tok")

    async def generate() -> list[Any]:
        return [chunk async for chunk in service.generate(spec, False, 0, owner="tok")]

    raises_request_error(
        ErrorCode.INVALID_ARGUMENT, "session 's' already exists", asyncio.run, generate()
    )
    assert service.stats().num_sessions == 1  # the owner's session is still there
    service.open_session(spec, owner="tok")  # and still unused: its open retried is no error
