"""``/health``'s probes run on a pool of their own, one thread per server: probes of hung
servers (each waits out its 2 s) leave the event loop's default executor, where prompts are
tokenized, free. They ran on it: on a 2-core device (6 threads there, ``min(32, cores +
4)``) 6 hung servers held every thread 2 s in every 5, and a prompt's tokenizing waited for
them. No network: clients whose ``Stats`` answers nothing before its deadline."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import ServerStats
from edgespec.runtime.openai_api.admission import Admission, Concurrency
from edgespec.runtime.openai_api.health import PROBE_TIMEOUT_S, PROBE_WAIT_S, Health
from edgespec.runtime.openai_api.server_watch import ServerWatch

NUM_THREADS = 6
"""The default executor's threads on a 2-core device, and as many hung servers."""


class Hung:
    """A server's client whose ``Stats`` answers nothing: it fails at its deadline (or as
    ``released`` is set)."""

    def __init__(self, released: threading.Event) -> None:
        self.released = released

    def stats(self, timeout_s: float | None = None) -> ServerStats:
        self.released.wait(timeout_s)
        raise RequestError(ErrorCode.UNAVAILABLE, "Deadline Exceeded")


async def _tokenizing_wait_s() -> float:
    """How long a prompt's tokenizing (a call on the default executor) waits to start, a
    health check having just probed :data:`NUM_THREADS` hung servers."""
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(NUM_THREADS))
    released = threading.Event()
    addresses = tuple(f"127.0.0.1:{port}" for port in range(1, NUM_THREADS + 1))
    clients = tuple(Hung(released) for _ in addresses)
    health = Health(ServerWatch(addresses), clients, Admission(Concurrency(1, 0)), time.monotonic)
    try:
        await health.answer(readiness=False)  # the probes start; it waits PROBE_WAIT_S
        start = time.monotonic()
        await asyncio.to_thread(lambda: None)
        return time.monotonic() - start
    finally:
        released.set()


def test_probes_of_hung_servers_leave_tokenizing_its_threads() -> None:
    took_s = asyncio.run(_tokenizing_wait_s())
    assert PROBE_TIMEOUT_S - PROBE_WAIT_S == 1.5  # what it waited: the probes' time left
    assert took_s < 0.75  # was about 1.5 s; half of it: a loaded machine's slack
