"""Sweep executors: where the independent runs of a sweep execute.

A :class:`SweepExecutor` maps a picklable, pure function over work items and yields
``(index, result)`` pairs as runs finish (in any order); the caller reassembles the order
and drives the progress bar. :class:`SerialExecutor` runs them one after another in this
process; :class:`ProcessPoolSweepExecutor` runs them on ``workers`` local processes (never
more than there are items; :func:`max_workers` bounds what a command line may ask). When
the caller stops early (an error, Ctrl-C, SIGTERM raised in the driver), the pool's pending
runs are cancelled and its processes ended and reaped at once, not after the queued runs
(:func:`ended`); its workers ignore SIGINT and die of SIGTERM
(:func:`~edgespec.sweeps.stops.worker_signals`), so a terminal's Ctrl-C or a
group's SIGTERM is the driver's to handle. A cluster engine (Ray,
:mod:`edgespec.sweeps.ray_executor`) plugs in behind the same Protocol:
``make_executor(workers, engine="ray", address=...)``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol

from edgespec.errors import UserInputError
from edgespec.sweeps.stops import WorkerDied, worker_signals

WORKERS_PER_CPU = 4
"""``--workers`` may ask for at most this many processes per CPU of this machine."""

MAX_CLUSTER_WORKERS = 10_000
"""``--workers`` with a Ray cluster's ``--address``: the most tasks in flight."""


def max_workers(address: str | None = None) -> int:
    """The most workers a sweep or sharded run may ask for: :data:`WORKERS_PER_CPU` per
    CPU of this machine (``os.cpu_count()``; 1 when unknown), or on a Ray cluster
    (``address``) :data:`MAX_CLUSTER_WORKERS`."""
    if address is not None:
        return MAX_CLUSTER_WORKERS
    return WORKERS_PER_CPU * (os.cpu_count() or 1)


def check_workers(workers: int, address: str | None = None) -> None:
    """Refuse a ``--workers`` over :func:`max_workers` (a :class:`UserInputError` naming the
    bound and where it comes from)."""
    limit = max_workers(address)
    if workers > limit:
        where = "on a Ray cluster" if address else f"{WORKERS_PER_CPU} per CPU here"
        raise UserInputError(f"--workers {workers}: at most {limit} ({where})")


class SweepExecutor(Protocol):
    """Runs ``fn`` on every item; yields ``(item index, fn(item))`` as each finishes. An
    item whose worker process dies without an answer raises
    :class:`~edgespec.sweeps.stops.WorkerDied`."""

    def map_unordered(
        self, fn: Callable[[Any], Any], items: Sequence[Any]
    ) -> Iterator[tuple[int, Any]]: ...


@dataclass(frozen=True, slots=True)
class SerialExecutor:
    """In this process, in order."""

    def map_unordered(
        self, fn: Callable[[Any], Any], items: Sequence[Any]
    ) -> Iterator[tuple[int, Any]]:
        for index, item in enumerate(items):
            yield index, fn(item)


@dataclass(frozen=True, slots=True)
class ProcessPoolSweepExecutor:
    """On ``workers`` local processes, but no more than there are items (``fn`` and the
    items must pickle)."""

    workers: int = 2

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")

    def map_unordered(
        self, fn: Callable[[Any], Any], items: Sequence[Any]
    ) -> Iterator[tuple[int, Any]]:
        workers = max(1, min(self.workers, len(items)))
        pool = ProcessPoolExecutor(max_workers=workers, initializer=worker_signals)
        try:
            futures = {pool.submit(fn, item): index for index, item in enumerate(items)}
            for future in as_completed(futures):
                try:
                    result = future.result()
                except BrokenProcessPool:  # its process killed (out of memory, SIGKILL)
                    raise WorkerDied(futures[future]) from None
                yield futures[future], result
        except BaseException:  # an error, Ctrl-C, SIGTERM, or the caller closed us
            ended(pool)
            raise
        pool.shutdown(wait=True)


PROCESS_END_S = 5.0
"""How long :func:`ended` waits for a pool's process to exit after SIGTERM before SIGKILL."""


def ended(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` now: its pending work cancelled, its processes sent SIGTERM (SIGKILL
    after :data:`PROCESS_END_S`) and reaped, and its manager thread finished, so that
    none outlives the caller. ``shutdown(wait=False)`` forgets that thread while it still
    closes the pool's pipes; the interpreter's exit then woke one it was closing
    (``OSError: [Errno 9] Bad file descriptor`` after a stopped run's last line)."""
    processes = list((pool._processes or {}).values())  # no public handles
    manager: threading.Thread | None = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(PROCESS_END_S)
        if process.is_alive():
            process.kill()
            process.join()
    if manager is not None:  # its processes gone, it marks the pool broken and closes it
        manager.join(PROCESS_END_S)


@contextlib.contextmanager
def results_of(
    executor: SweepExecutor, fn: Callable[[Any], Any], items: Sequence[Any]
) -> Iterator[Iterator[tuple[int, Any]]]:
    """``executor.map_unordered(fn, items)``, closed as the block ends, early too (an error
    in the block, Ctrl-C): a pool's pending runs are cancelled and its processes ended
    then, not when the iterator is collected."""
    results = executor.map_unordered(fn, items)
    try:
        yield results
    finally:
        close = getattr(results, "close", None)  # a generator's; an iterator may have none
        if close is not None:
            close()


ENGINES = ("local", "ray")
"""Where a sweep's runs execute: this machine's processes, or Ray."""


def make_executor(workers: int, engine: str = "local", address: str | None = None) -> SweepExecutor:
    """``local``: serial for one worker, a local process pool for more. ``ray``: a
    :class:`~edgespec.sweeps.ray_executor.RaySweepExecutor` with ``workers`` CPUs
    (a local Ray), or on the cluster at ``address``."""
    if engine == "ray":
        from edgespec.sweeps.ray_executor import RaySweepExecutor

        return RaySweepExecutor(address, max(1, workers))
    if engine != "local":
        raise ValueError(f"unknown sweep engine {engine!r}; known: {list(ENGINES)}")
    if address is not None:
        raise ValueError("an address needs the ray engine")
    return SerialExecutor() if workers <= 1 else ProcessPoolSweepExecutor(workers)
