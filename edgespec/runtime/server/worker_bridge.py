"""The bridge between the service's event loop and a worker thread that plays rounds:
:class:`ServiceVerifier`, a drafter's verifier whose every call runs on the loop (so a
worker's verifications batch with everyone else's), and :func:`from_worker`, the worker's
items streamed back to the loop. Fused runs (:mod:`.fused_run`) and the fused baseline
(:mod:`.fused_baseline`) both run on it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
from collections.abc import AsyncGenerator, Callable, Coroutine
from concurrent.futures import Executor
from typing import Any, Protocol, TypeVar

from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SessionSpec, VerifyCall, VerifyReply

Chunk = tuple[tuple[int, ...], bool]
WAIT_SLICE_S = 0.25
"""How often a worker waiting on the event loop looks whether it should stop waiting."""
_T = TypeVar("_T")


class SessionHost(Protocol):
    """What a fused run needs of the verification service
    (:class:`~edgespec.runtime.server.service.VerificationService`): open a session, verify
    its rounds, close it, each for an owner (the caller's identity when auth is on); and the
    executor its worker thread runs on."""

    @property
    def fused_executor(self) -> Executor: ...

    def open_session(
        self, spec: SessionSpec, owner: str | None = ..., *, fresh: bool = ...
    ) -> None: ...

    async def verify(
        self,
        call: VerifyCall,
        owner: str | None = None,
        time_left_s: float | None = None,
        in_run: bool = False,
    ) -> VerifyReply: ...

    def session_serial(self, session_id: str) -> int: ...

    def close_session(
        self, session_id: str, owner: str | None = None, serial: int | None = None
    ) -> bool: ...


class ServiceVerifier:
    """A :class:`~edgespec.runtime.edge.drafter.Verifier` for a worker thread: every call runs
    on the service's event loop, for ``owner``. Once ``cancelled`` is set (the client went
    away), or the loop stops (the server is stopping), a call waiting on the loop and every
    later call fail with ``CANCELLED``: the worker ends rather than wait for a loop that
    will never answer (a process could not exit past it). ``opened`` holds the sessions its
    own ``open`` opened (the ones its caller may close on its behalf)."""

    def __init__(
        self,
        service: SessionHost,
        loop: asyncio.AbstractEventLoop,
        owner: str | None = None,
    ) -> None:
        self._service = service
        self._loop = loop
        self.owner = owner
        self.cancelled = False
        self.opened: set[str] = set()
        self._serials: dict[str, int] = {}  # session -> the serial its rounds are bound to

    def bind(self, session_id: str, serial: int) -> None:
        """Verify ``session_id``'s rounds only while the session of ``serial`` is open: one
        closed and opened again under its id is another, refused ``NOT_FOUND``."""
        self._serials[session_id] = serial

    def serial_of(self, session_id: str) -> int | None:
        """The serial ``session_id``'s rounds are bound to (``None``: not bound)."""
        return self._serials.get(session_id)

    def _wait(self, make: Callable[[], Coroutine[Any, Any, _T]], cleanup: bool = False) -> _T:
        """``make()``'s coroutine run on the loop, its result waited for in slices; a
        ``cleanup`` call (a close) still runs once the verifier is cancelled."""
        self._check(cleanup)
        future = asyncio.run_coroutine_threadsafe(make(), self._loop)
        while True:
            try:
                return future.result(timeout=WAIT_SLICE_S)
            except concurrent.futures.TimeoutError:
                try:
                    self._check(cleanup)
                except RequestError:
                    future.cancel()
                    raise

    def _check(self, cleanup: bool) -> None:
        if self.cancelled and not cleanup:
            raise RequestError(ErrorCode.CANCELLED, "the fused-mode client went away")
        if not self._loop.is_running():
            raise RequestError(ErrorCode.CANCELLED, "the server stopped")

    def _on_loop(self, fn: Callable[[], _T], cleanup: bool = False) -> _T:
        async def call() -> _T:
            return fn()

        return self._wait(call, cleanup)

    def open(self, spec: SessionSpec) -> None:
        """A session of its own (``fresh``), in ``opened`` as it opens (on the loop)."""

        def opening() -> None:
            self._service.open_session(spec, self.owner, fresh=True)
            self.opened.add(spec.session_id)
            self.bind(spec.session_id, self._service.session_serial(spec.session_id))

        self._on_loop(opening)

    def verify(self, call: VerifyCall) -> VerifyReply:
        """Verify on the service; the drafter's own draft time stands, its network time
        (thread hops only) is reported as 0: the server drafts for itself."""
        local = dataclasses.replace(call, network_s=0.0)
        return self._wait(lambda: self._verify_bound(local))

    async def _verify_bound(self, call: VerifyCall) -> VerifyReply:
        sid, serial = call.session_id, self._serials.get(call.session_id)
        try:  # on the loop: nothing closes or opens a session between this and the admission
            same = serial is None or self._service.session_serial(sid) == serial
        except RequestError:
            same = False  # closed
        if not same:
            message = f"session {sid!r} was closed during this fused run: its rounds end here"
            raise RequestError(ErrorCode.NOT_FOUND, message)
        return await self._service.verify(call, self.owner, in_run=True)

    def close(self, session_id: str) -> None:
        """Close a session it opened while it is still that one (its serial); another of
        that id, there before or opened since, is another client's, left alone."""
        if session_id not in self.opened:
            return
        serial = self.serial_of(session_id)
        self._on_loop(lambda: self._service.close_session(session_id, self.owner, serial),
                      cleanup=True)  # fmt: skip
        self.opened.discard(session_id)


async def from_worker(
    work: Callable[[Callable[[_T], None]], None],
    verifier: ServiceVerifier,
    executor: Executor | None = None,
) -> AsyncGenerator[_T, None]:
    """Run ``work(emit)`` on a thread of ``executor`` (the service's fused runs' own, so
    that they do not wait for threads of the event loop's small default pool, where one
    client's long runs held every thread from the others'; ``None``: that default pool) and
    yield what it emits, in order; its exception is raised here. When the caller stops
    early, the verifier is cancelled (the worker's next verification fails) and the worker
    is waited for."""
    loop = asyncio.get_running_loop()
    items: asyncio.Queue[tuple[_T] | BaseException | None] = asyncio.Queue()

    def push(item: tuple[_T] | BaseException | None) -> None:
        loop.call_soon_threadsafe(items.put_nowait, item)

    def run() -> None:
        try:
            work(lambda x: push((x,)))
            push(None)
        except BaseException as exc:  # surfaced to the caller below
            push(exc)

    worker = loop.run_in_executor(executor, run)
    try:
        while (item := await items.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item[0]
    finally:
        verifier.cancelled = True
        await asyncio.shield(worker)
