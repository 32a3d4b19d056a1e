"""The whole-request fused baseline (``Generate`` with ``MODE_FUSED``, ``edgespec draft
--mode fused``; :func:`fused_baseline`): the server decodes the request alone, by its
fused-rounds setting. ``colocated``: :func:`fused_generate`,
:func:`edgespec.runtime.edge.drafter.generate` itself on the server, drafted by the co-located
draft with a static window. ``cloud_only``: :func:`cloud_only_generate`, one target token per
round (:mod:`edgespec.runtime.server.cloud_only`). Both verify through the service's queue
and run on a worker thread (:func:`edgespec.runtime.server.worker_bridge.from_worker`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

from edgespec.policies.interfaces import WindowPolicy
from edgespec.policies.window import StaticWindow
from edgespec.runtime.backends.base import DraftBackend
from edgespec.runtime.edge.drafter import DraftOptions, generate
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec
from edgespec.runtime.server.cloud_only import cloud_only_decode
from edgespec.runtime.server.worker_bridge import Chunk, ServiceVerifier, SessionHost, from_worker


async def fused_baseline(
    service: SessionHost,
    spec: SessionSpec,
    gamma: int,
    max_draft_tokens: int,
    draft_factory: Callable[[], DraftBackend] | None,
    cloud_only: bool,
    owner: str | None = None,
) -> AsyncIterator[Chunk]:
    """The checked baseline request: :func:`cloud_only_generate` (``cloud_only``; its wasted
    passes drafted by ``draft_factory``'s draft when given) or :func:`fused_generate` with a
    static window of ``gamma`` (``draft_factory``'s draft, which it needs), its session
    opened for ``owner`` (the caller's identity with auth on: the session counts against its
    limits). A refusal is a :class:`RequestError`, raised at the first chunk: among them a
    drafted baseline of a session naming a rule other than ``"exact"`` (its rounds are the
    drafter's own, verified exactly; a cloud-only one opens ``spec`` as sent)."""
    if draft_factory is None and not cloud_only:
        raise RequestError(
            ErrorCode.FAILED_PRECONDITION, "fused mode needs a server started with --draft"
        )
    if not 1 <= gamma <= max_draft_tokens:
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT, f"gamma {gamma} outside 1..{max_draft_tokens}"
        )
    if not cloud_only and draft_factory is not None and spec.verification_rule != "exact":
        raise RequestError(
            ErrorCode.INVALID_ARGUMENT,
            f"verification_rule {spec.verification_rule!r}: Generate cannot run the fused "
            "baseline under it (drafted by this server's draft, verified with 'exact' only)",
        )
    drafter = None if draft_factory is None else draft_factory()
    chunks = (
        cloud_only_generate(service, spec, drafter, owner)
        if cloud_only or drafter is None
        else fused_generate(service, spec, drafter, StaticWindow(gamma), owner)
    )
    async for chunk in chunks:
        yield chunk


async def _baseline(
    service: SessionHost,
    spec: SessionSpec,
    verifier: ServiceVerifier,
    work: Callable[[Callable[[Chunk], None]], None],
) -> AsyncIterator[Chunk]:
    """A baseline's chunks from ``work`` on a worker thread; its session closed at the end
    (also when the client went away) when this request opened it: a session of that id
    that was there before (the open refused as a duplicate) is another client's."""
    try:
        async with contextlib.aclosing(
            from_worker(work, verifier, service.fused_executor)
        ) as chunks:
            async for chunk in chunks:
                yield chunk
    finally:
        if spec.session_id in verifier.opened:  # while it is still the one it opened
            service.close_session(
                spec.session_id, verifier.owner, verifier.serial_of(spec.session_id)
            )


async def fused_generate(
    service: SessionHost,
    spec: SessionSpec,
    drafter: DraftBackend,
    window: WindowPolicy,
    owner: str | None = None,
) -> AsyncIterator[Chunk]:
    """Stream ``spec``'s output, drafted by ``drafter`` with ``window`` on this server, as
    ``(token_ids, finished)`` chunks, its session ``owner``'s; the last chunk is
    ``((), True)``."""
    verifier = ServiceVerifier(service, asyncio.get_running_loop(), owner)
    options = DraftOptions(spec.session_id, spec.client_id, spec.slo_class)

    def work(emit: Callable[[Chunk], None]) -> None:
        generate(
            verifier,
            drafter,
            spec.prompt_token_ids,
            spec.sampling,
            options,
            window,
            on_tokens=lambda tokens: emit((tokens, False)),
        )
        emit(((), True))

    async for chunk in _baseline(service, spec, verifier, work):
        yield chunk


async def cloud_only_generate(
    service: SessionHost,
    spec: SessionSpec,
    drafter: DraftBackend | None,
    owner: str | None = None,
) -> AsyncIterator[Chunk]:
    """Stream ``spec``'s output decoded by the target alone, one token per cloud-only round
    (each after a wasted pass of ``drafter`` when given), as :func:`fused_generate` does."""
    verifier = ServiceVerifier(service, asyncio.get_running_loop(), owner)

    def work(emit: Callable[[Chunk], None]) -> None:
        def on_tokens(tokens: tuple[int, ...]) -> None:
            emit((tokens, False))

        verifier.open(spec)
        cloud_only_decode(verifier, drafter, spec, on_tokens, time.perf_counter)
        verifier.close(spec.session_id)  # before the last chunk, as the drafter's rounds do
        emit(((), True))

    async for chunk in _baseline(service, spec, verifier, work):
        yield chunk
