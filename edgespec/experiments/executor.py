"""Sweep executors: where the independent runs of a sweep execute.

A :class:`SweepExecutor` maps a picklable, pure function over work items and yields
``(index, result)`` pairs as runs finish (in any order); the caller reassembles the order
and drives the progress bar. :class:`SerialExecutor` runs them one after another in this
process; :class:`ProcessPoolSweepExecutor` runs them on ``workers`` local processes. A
cluster engine (Ray) plugs in behind the same Protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Protocol


class SweepExecutor(Protocol):
    """Runs ``fn`` on every item; yields ``(item index, fn(item))`` as each finishes."""

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
    """On ``workers`` local processes (``fn`` and the items must pickle)."""

    workers: int = 2

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")

    def map_unordered(
        self, fn: Callable[[Any], Any], items: Sequence[Any]
    ) -> Iterator[tuple[int, Any]]:
        with ProcessPoolExecutor(max_workers=self.workers) as pool:
            futures = {pool.submit(fn, item): index for index, item in enumerate(items)}
            for future in as_completed(futures):
                yield futures[future], future.result()


def make_executor(workers: int) -> SweepExecutor:
    """Serial for one worker, a local process pool for more."""
    return SerialExecutor() if workers <= 1 else ProcessPoolSweepExecutor(workers)
