"""A verification server on its own event loop in a background thread (the calibration's
and the reproductions' in-process servers, tests, benchmarks): :func:`start_server` on a
loop that :class:`ServerThread` owns."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from edgespec.runtime.server.service import VerificationService
from edgespec.runtime.wire.grpc_server import start_server


class ServerThread:
    """A server on its own event loop in a daemon thread: ``with ServerThread(make) as s``.

    ``make`` builds the :class:`VerificationService` inside that loop.
    """

    def __init__(self, make: Callable[[], VerificationService], port: int = 0) -> None:
        self._make = make
        self._port = port
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.port = 0
        self.service: VerificationService | None = None
        self._server: Any = None

    def start(self) -> ServerThread:
        """Start the loop and the server on it; when the server cannot start (its port in
        use, say), the loop stops too and the error is raised here."""
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        try:
            future.result(timeout=30)
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            raise
        return self

    async def _start(self) -> None:
        self.service = self._make()
        self._server, self.port = await start_server(self.service, self._port)

    def stop(self, grace_s: float | None = None) -> None:
        """Stop the server and its loop (idempotent)."""
        if not self._thread.is_alive():
            return

        async def _stop() -> None:
            await self._server.stop(grace_s)
            if self.service is not None:
                await self.service.stop()

        asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
