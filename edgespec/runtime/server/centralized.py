"""The centralized baseline (a ``Generate`` not fused): plain autoregressive decoding, one
token a round with an empty draft block, batched with everyone else's verifications. Its
session is its own: opened fresh, verified and closed for its owner, and closed at the end
only while it is still the session it opened (its serial): one that a client opened under
the same id after this one was closed is that client's, and stays."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable

from edgespec.core.sampling_params import TokenLogprobs
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall
from edgespec.runtime.server.worker_bridge import SessionHost

Chunk = tuple[tuple[int, ...], bool]
"""``(committed token ids, finished)``."""


async def centralized_generate(
    service: SessionHost,
    spec: SessionSpec,
    owner: str | None,
    on_logprobs: Callable[[tuple[TokenLogprobs, ...]], None] | None = None,
    on_prompt_logprobs: Callable[[tuple[TokenLogprobs, ...]], None] | None = None,
) -> AsyncGenerator[Chunk, None]:
    """``spec``'s output as chunks, a round each; the session closed before the chunk marked
    finished is yielded (a client stops reading there), and however the stream ends. The
    prompt's log-probabilities go to ``on_prompt_logprobs`` before the first chunk, each
    chunk's to ``on_logprobs`` before it, when the session asks for them."""
    service.open_session(spec, owner, fresh=True)
    serial = service.session_serial(spec.session_id)
    num_tokens, finished = len(spec.prompt_token_ids), False
    try:
        while not finished:
            _check_still_open(service, spec.session_id, serial)
            reply = await service.verify(VerifyCall(spec.session_id, num_tokens, ()), owner)
            num_tokens += len(reply.outcome.committed_token_ids)
            if on_prompt_logprobs is not None and reply.outcome.prompt_logprobs is not None:
                on_prompt_logprobs(reply.outcome.prompt_logprobs)
            if on_logprobs is not None and reply.outcome.logprobs:
                on_logprobs(reply.outcome.logprobs)
            finished = reply.outcome.finished
            if finished:
                service.close_session(spec.session_id, owner, serial)
            yield reply.outcome.committed_token_ids, finished
    finally:
        if not finished:
            service.close_session(spec.session_id, owner, serial)


def _check_still_open(service: SessionHost, session_id: str, serial: int) -> None:
    """``NOT_FOUND`` once the session this Generate opened is closed, whether or not one was
    opened under its id since (another client's: its owner's refusal is not this caller's
    answer). Checked just before each verification: nothing opens or closes a session
    between this and the verification's admission (no await between them)."""
    try:
        same = service.session_serial(session_id) == serial
    except RequestError:
        same = False
    if not same:
        message = f"session {session_id!r} was closed during this Generate: it ends here"
        raise RequestError(ErrorCode.NOT_FOUND, message)
