"""edgespec.sweeps.executor at its edges: a process pool's results come back under
their items' indexes, a pool stopped early leaves nothing of itself running, and the Ray
engine asks for at least one CPU."""

from __future__ import annotations

import threading
import time
from concurrent.futures.process import _ExecutorManagerThread

from edgespec.sweeps.executor import ProcessPoolSweepExecutor, make_executor, results_of
from edgespec.sweeps.ray_executor import RaySweepExecutor


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
