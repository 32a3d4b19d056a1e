"""edgespec.sweeps.executor at its edges: a process pool's results come back under
their items' indexes, and the Ray engine asks for at least one CPU."""

from __future__ import annotations

from edgespec.sweeps.executor import ProcessPoolSweepExecutor, make_executor
from edgespec.sweeps.ray_executor import RaySweepExecutor


def test_a_process_pool_yields_each_result_under_its_items_index() -> None:
    items = [-3, -1, -4, -1, -5]
    results = list(ProcessPoolSweepExecutor(2).map_unordered(abs, items))
    assert sorted(results) == [(0, 3), (1, 1), (2, 4), (3, 1), (4, 5)]


def test_the_ray_engine_gets_at_least_one_cpu() -> None:
    """``--workers`` is >= 1 from the CLI; a caller's 0 still makes a valid executor."""
    assert make_executor(0, "ray") == RaySweepExecutor(None, 1)
    assert make_executor(3, "ray", "h:1") == RaySweepExecutor("h:1", 3)
