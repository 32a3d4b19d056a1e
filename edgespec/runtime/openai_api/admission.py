"""How many generations the endpoint runs at once, and how many it lets wait.

Each generation runs on a thread of the endpoint's own pool of ``max_running`` workers
(never the event loop's default executor, which request parsing, ``/health`` and
``/v1/models`` are free to use). A request that finds every worker busy waits in a FIFO
queue of at most ``max_queued``; beyond that it is refused at once with a 429 and
``Retry-After``. ``/metrics`` shows the running and queued requests.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from edgespec.runtime.openai_api.errors import RETRY_AFTER_S, ApiError

GENERATIONS_PER_CORE = 4
"""The default ``max_running`` per CPU core: a generation spends most of its time waiting
for its verifications, not drafting (docs/DEPLOY.md, sizing a device's endpoint)."""


@dataclass(frozen=True, slots=True)
class Concurrency:
    """At most ``max_running`` generations at once and ``max_queued`` more waiting."""

    max_running: int
    max_queued: int

    @staticmethod
    def for_device(num_cores: int | None = None) -> Concurrency:
        """The default for a device of ``num_cores`` (this one's when ``None``):
        ``GENERATIONS_PER_CORE`` per core running, as many again queued."""
        cores = num_cores if num_cores is not None else (os.cpu_count() or 1)
        running = GENERATIONS_PER_CORE * max(cores, 1)
        return Concurrency(running, running)


class Admission:
    """Admits generations onto its own worker pool (use on the event loop's thread only)."""

    def __init__(self, limits: Concurrency) -> None:
        self.limits = limits
        self.executor = ThreadPoolExecutor(limits.max_running, "edgespec-openai")
        self.running = 0
        self.refused_total = 0
        self.admitted_total = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def queued(self) -> int:
        return len(self._waiting)

    async def acquire(self) -> None:
        """A worker for one generation, waiting in line for it when all are busy; a 429
        when the line is full. The caller must :meth:`release` it."""
        if self.running < self.limits.max_running and not self._waiting:
            self.running += 1
            self.admitted_total += 1
            return
        if len(self._waiting) >= self.limits.max_queued:
            self.refused_total += 1
            raise ApiError(429, f"the endpoint is busy: {self.running} generations running and "
                           f"{len(self._waiting)} queued (--openai-max-concurrent "
                           f"{self.limits.max_running}, --openai-max-queued "
                           f"{self.limits.max_queued}); retry after {RETRY_AFTER_S}s",
                           kind="rate_limit_error", code="too_many_requests",
                           retry_after_s=RETRY_AFTER_S)  # fmt: skip
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn in self._waiting:
                self._waiting.remove(turn)
            elif turn.done() and not turn.cancelled():
                self.release()  # the worker was handed over as this request left
            raise
        self.admitted_total += 1

    def release(self) -> None:
        """A generation ended: its worker goes to the first request waiting, if any."""
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self.running -= 1

    def metrics(self) -> str:
        """The admission gauges and counters in Prometheus' text format."""
        rows = (
            ("requests_running", "gauge", "generations running now", self.running),
            ("requests_queued", "gauge", "requests waiting for a worker", self.queued),
            ("max_running", "gauge", "--openai-max-concurrent", self.limits.max_running),
            ("max_queued", "gauge", "--openai-max-queued", self.limits.max_queued),
            ("requests_admitted_total", "counter", "generations started", self.admitted_total),
            ("requests_refused_total", "counter", "requests refused with 429", self.refused_total),
        )
        lines: list[str] = []
        for name, kind, text, value in rows:
            metric = f"edgespec_openai_{name}"
            lines += [f"# HELP {metric} {text}", f"# TYPE {metric} {kind}", f"{metric} {value}"]
        return "\n".join(lines) + "\n"
