"""Fused mode (the server drafts and verifies itself) through the drafter's own round loop.

:func:`fused_generate` runs :func:`edgespec.runtime.drafter.generate` — the loop every
edge drafter runs, with its window policy, γ capping and round records — on a worker
thread against :class:`ServiceVerifier`, which submits each verification to the service's
queue on its event loop, so fused rounds batch with everyone else's. The committed tokens
stream back as ``(token_ids, finished)`` chunks; the last chunk is ``((), True)``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, TypeVar

from edgespec.policies.interfaces import WindowPolicy
from edgespec.runtime.backends.base import DraftBackend
from edgespec.runtime.drafter import DraftOptions, generate
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply

if TYPE_CHECKING:
    from edgespec.runtime.server import VerificationService

Chunk = tuple[tuple[int, ...], bool]
_T = TypeVar("_T")


class ServiceVerifier:
    """A :class:`~edgespec.runtime.drafter.Verifier` for a worker thread: every call runs
    on the service's event loop. Once ``cancel()`` is called, verifications fail."""

    def __init__(self, service: VerificationService, loop: asyncio.AbstractEventLoop) -> None:
        self._service = service
        self._loop = loop
        self.cancelled = False

    def _on_loop(self, fn: Callable[[], _T]) -> _T:
        async def call() -> _T:
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result()

    def open(self, spec: SessionSpec) -> None:
        self._on_loop(lambda: self._service.open_session(spec))

    def verify(self, call: VerifyCall) -> VerifyReply:
        """Verify on the service; the drafter's own draft time stands, its network time
        (thread hops only) is reported as 0: the server drafts for itself."""
        if self.cancelled:
            raise RequestError(ErrorCode.CANCELLED, "the fused-mode client went away")
        local = dataclasses.replace(call, network_s=0.0)
        return asyncio.run_coroutine_threadsafe(self._service.verify(local), self._loop).result()

    def close(self, session_id: str) -> None:
        self._on_loop(lambda: self._service.close_session(session_id))


async def fused_generate(
    service: VerificationService,
    spec: SessionSpec,
    drafter: DraftBackend,
    window: WindowPolicy,
) -> AsyncIterator[Chunk]:
    """Stream ``spec``'s output, drafted by ``drafter`` with ``window`` on this server."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[Chunk | BaseException] = asyncio.Queue()
    verifier = ServiceVerifier(service, loop)
    options = DraftOptions(spec.session_id, spec.client_id, spec.slo_class)

    def push(item: Chunk | BaseException) -> None:
        loop.call_soon_threadsafe(chunks.put_nowait, item)

    def run() -> None:
        try:
            generate(
                verifier,
                drafter,
                spec.prompt_token_ids,
                spec.sampling,
                options,
                window,
                on_tokens=lambda tokens: push((tokens, False)),
            )
            push(((), True))
        except BaseException as exc:  # surfaced to the caller below
            push(exc)

    worker = loop.run_in_executor(None, run)
    try:
        while True:
            item = await chunks.get()
            if isinstance(item, BaseException):
                raise item
            yield item
            if item[1]:
                break
    finally:
        verifier.cancelled = True
        await asyncio.shield(worker)
        service.close_session(spec.session_id)  # left open when the client went away
