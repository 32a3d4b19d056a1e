"""edgespec.sweeps.executor at its edges: a process pool's results come back under
their items' indexes, a pool stopped early leaves nothing of itself running, and the Ray
engine asks for at least one CPU."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures.process import _ExecutorManagerThread
from typing import Any

import pytest

from edgespec.errors import RunFailedError
from edgespec.sweeps.executor import ProcessPoolSweepExecutor, make_executor, results_of
from edgespec.sweeps.grid import run_sweep
from edgespec.sweeps.ray_executor import RaySweepExecutor
from edgespec.sweeps.stops import WorkerDied
from tests.sweeps.test_capacity import metrics_with_violations


def test_a_process_pool_yields_each_result_under_its_items_index() -> None:
    items = [-3, -1, -4, -1, -5]
    results = list(ProcessPoolSweepExecutor(2).map_unordered(abs, items))
    assert sorted(results) == [(0, 3), (1, 1), (2, 4), (3, 1), (4, 5)]


def test_the_ray_engine_gets_at_least_one_cpu() -> None:
    """``--workers`` is >= 1 from the CLI; a caller's 0 still makes a valid executor."""
    assert make_executor(0, "ray") == RaySweepExecutor(None, 1)
    assert make_executor(3, "ray", "h:1") == RaySweepExecutor("h:1", 3)


def test_a_pool_stopped_early_leaves_none_of_its_threads_running() -> None:
    """A sweep stopped while its points run (an error, Ctrl-C, SIGTERM in the driver):
    once the pool is ended, its processes are reaped and its manager thread has finished
    too, so the interpreter's exit does not wake a pipe that thread is closing (a stopped
    run's stderr once ended in ``OSError: [Errno 9] Bad file descriptor`` after its
    one line)."""
    for _ in range(5):
        with results_of(ProcessPoolSweepExecutor(2), time.sleep, [0.0, 30.0, 30.0]) as results:
            assert next(results) == (0, None)  # the others run (the block leaves here)
            pool_threads = [
                t for t in threading.enumerate() if isinstance(t, _ExecutorManagerThread)
            ]
            assert pool_threads
        assert [t.name for t in pool_threads if t.is_alive()] == []


def _killed_at_two(item: int) -> int:
    """A point whose worker the system kills (out of memory, SIGKILL)."""
    if item == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return item


def test_a_killed_worker_is_its_point_named_in_one_line_status_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A process pool's worker killed under a point raised BrokenProcessPool, a traceback
    that never named the point; it is WorkerDied for its item, the run's one line names it."""
    with pytest.raises(WorkerDied) as info:
        list(ProcessPoolSweepExecutor(2).map_unordered(_killed_at_two, [0, 1, 2, 3]))
    assert info.value.index == 2

    class Dies:
        def map_unordered(self, fn: Any, items: Any) -> Iterator[tuple[int, Any]]:
            yield 0, fn(items[0])
            raise WorkerDied(1)

    with pytest.raises(RunFailedError) as failed:
        run_sweep({"seed": 0}, {"seed": [5, 6]}, lambda d: metrics_with_violations(0),
                  progress=False, executor=Dies())  # fmt: skip
    assert str(failed.value) == (
        "sweep point 2 of 2 (seed=6): its worker process died without an answer (killed: out "
        "of memory, or a signal); the points finished are kept: run the same command again, "
        "with fewer --workers if memory ran out"
    )
