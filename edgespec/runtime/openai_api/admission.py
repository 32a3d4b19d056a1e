"""How many generations the endpoint runs at once, and how many it lets wait.

Each generation runs on a thread of the endpoint's own pool of ``max_running`` workers
(never the event loop's default executor, where prompts are tokenized; ``/health``'s probes
have a pool of their own too: :mod:`.health`). A request that finds every worker busy waits
in a FIFO queue of at most ``max_queued``; beyond that it is refused at once with a 429 and
``Retry-After``. So is a request, as it arrives, from a client (its address) that already
has ``max_per_client`` requests in flight (being read, tokenized, queued or run), when that
cap is set: with it at ``max_running``, one client may hold every worker but not the queue
or the tokenizer's line too, which stay for the others. ``/metrics`` shows the running and
queued requests. :class:`Line` (places held, the rest waiting in order) is shared with the
line of prompts waiting to be tokenized (:mod:`.tokenizing`).
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
    """At most ``max_running`` generations at once and ``max_queued`` more waiting; at most
    ``max_per_client`` requests in flight from one client address (``None``: no cap)."""

    max_running: int
    max_queued: int
    max_per_client: int | None = None

    def told(self) -> str:
        """As the start-up line says it: ``8 generations at once, 8 queued`` (``, at most
        2 per client`` where capped)."""
        told = f"{self.max_running} generations at once, {self.max_queued} queued"
        return told if self.max_per_client is None else (
            f"{told}, at most {self.max_per_client} per client")  # fmt: skip

    @staticmethod
    def for_device(num_cores: int | None = None) -> Concurrency:
        """The default for a device of ``num_cores`` (this one's when ``None``):
        ``GENERATIONS_PER_CORE`` per core running, as many again queued, no cap per client
        (a device's endpoint most often serves one local program, whose bursts queue)."""
        cores = num_cores if num_cores is not None else (os.cpu_count() or 1)
        running = GENERATIONS_PER_CORE * max(cores, 1)
        return Concurrency(running, running)


class Line:
    """At most ``slots`` holders at once, the others waiting in arrival order (use on the
    event loop's thread only). A holder must :meth:`release` its place."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.held = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def queued(self) -> int:
        return len(self._waiting)

    async def _take(self) -> None:
        """A place, waiting in line for it when all are held; a waiter cancelled gives its
        place in line up (or back, when it was handed one as it left)."""
        if self.held < self.slots and not self._waiting:
            self.held += 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn in self._waiting:
                self._waiting.remove(turn)
            elif turn.done() and not turn.cancelled():
                self.release()  # the place was handed over as this waiter left
            raise

    def release(self) -> None:
        """A holder is done: its place goes to the first waiter, if any."""
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)
                return
        self.held -= 1


def busy(message: str) -> ApiError:
    """A 429 that OpenAI clients retry after ``Retry-After``."""
    return ApiError(429, f"the endpoint is busy: {message}; retry after {RETRY_AFTER_S}s",
                    kind="rate_limit_error", code="too_many_requests",
                    retry_after_s=RETRY_AFTER_S)  # fmt: skip


def metric_family(name: str, kind: str, text: str, samples: list[tuple[str, int]]) -> str:
    """The metric ``edgespec_openai_NAME`` of ``kind`` (``gauge``, ``counter``) and help
    ``text`` in Prometheus' text format, each of ``samples`` a ``(labels, value)`` (labels
    ``{server="…"}``, or ``""``)."""
    metric = f"edgespec_openai_{name}"
    lines = [f"# HELP {metric} {text}", f"# TYPE {metric} {kind}"]
    return "\n".join(lines + [f"{metric}{labels} {value}" for labels, value in samples]) + "\n"


def prometheus(rows: tuple[tuple[str, str, str, int], ...]) -> str:
    """``(name, type, help, value)`` rows in Prometheus' text format."""
    return "".join(metric_family(name, kind, text, [("", value)])
                   for name, kind, text, value in rows)  # fmt: skip


class ClientHold:
    """One request counted against its client's cap, from its arrival until its answer
    ends; :meth:`leave` (or the end of its ``with`` block) counts it out, once."""

    def __init__(self, counts: dict[str, int], client: str) -> None:
        self._counts, self.client = counts, client
        counts[client] = counts.get(client, 0) + 1
        self._left = False

    def __enter__(self) -> ClientHold:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.leave()

    def leave(self) -> None:
        if self._left:
            return
        self._left = True
        left = self._counts[self.client] - 1
        if left:
            self._counts[self.client] = left
        else:
            del self._counts[self.client]  # the map holds only clients with requests


class Admission(Line):
    """Admits generations onto its own worker pool (use on the event loop's thread only),
    counting each client's requests in flight (:meth:`hold`)."""

    def __init__(self, limits: Concurrency) -> None:
        super().__init__(limits.max_running)
        self.limits = limits
        self.executor = ThreadPoolExecutor(limits.max_running, "edgespec-openai")
        self.refused_total = 0
        self.refused_per_client_total = 0
        self.admitted_total = 0
        self._per_client: dict[str, int] = {}  # requests in flight, by client

    @property
    def running(self) -> int:
        return self.held

    def hold(self, client: str) -> ClientHold:
        """A request of ``client`` (its address) counted in as it arrives, or a 429 when
        the client has ``max_per_client`` requests in flight (being read, tokenized,
        queued or run). The caller must :meth:`ClientHold.leave` once it is answered."""
        held, cap = self._per_client.get(client, 0), self.limits.max_per_client
        if cap is not None and held >= cap:
            self.refused_total += 1
            self.refused_per_client_total += 1
            raise busy(f"client {client} has {held} requests in flight "
                       f"(--openai-max-per-client {cap})")  # fmt: skip
        return ClientHold(self._per_client, client)

    async def acquire(self) -> None:
        """A worker for one generation, waiting in line for it when all are busy; a 429
        when the line is full. The caller must :meth:`release` it."""
        full = self.held >= self.slots or self.queued > 0
        if full and self.queued >= self.limits.max_queued:
            self.refused_total += 1
            raise busy(f"{self.running} generations running and {self.queued} queued "
                       f"(--openai-max-concurrent {self.limits.max_running}, "
                       f"--openai-max-queued {self.limits.max_queued})")  # fmt: skip
        await self._take()

    def started(self) -> None:
        """A generation started on the worker :meth:`acquire` gave: counted admitted (one
        that got a worker and then no generation, the endpoint stopping or its client gone,
        is not: it ends in no outcome either)."""
        self.admitted_total += 1

    @property
    def num_clients(self) -> int:
        """Clients with requests in flight."""
        return len(self._per_client)

    def metrics(self) -> str:
        """The admission gauges and counters in Prometheus' text format."""
        return prometheus((
            ("requests_running", "gauge", "generations running now", self.running),
            ("requests_queued", "gauge", "requests waiting for a worker", self.queued),
            ("max_running", "gauge", "--openai-max-concurrent", self.limits.max_running),
            ("max_queued", "gauge", "--openai-max-queued", self.limits.max_queued),
            ("clients_in_flight", "gauge", "clients with requests in flight",
             self.num_clients),
            ("requests_admitted_total", "counter", "generations started", self.admitted_total),
            ("requests_refused_total", "counter", "requests refused with 429", self.refused_total),
            ("requests_refused_per_client_total", "counter",
             "requests refused with 429 for their client's cap", self.refused_per_client_total),
        ))  # fmt: skip
