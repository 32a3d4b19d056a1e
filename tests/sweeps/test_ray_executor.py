"""The Ray sweep executor: one local Ray session (2 CPUs) for the module."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from edgespec.sweeps.executor import SerialExecutor, make_executor  # noqa: E402
from edgespec.sweeps.ray_executor import RaySweepExecutor, start_local_ray  # noqa: E402


def _square_with_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    start_local_ray(ray, 2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def test_ray_results_equal_the_serial_executor(local_ray: None) -> None:
    items = list(range(9))
    serial = dict(SerialExecutor().map_unordered(lambda x: x * x, items))
    executor = make_executor(2, engine="ray")
    assert isinstance(executor, RaySweepExecutor)
    results = list(executor.map_unordered(_square_with_pid, items))
    assert sorted(i for i, _ in results) == items  # every index exactly once
    assert {i: r[0] for i, r in results} == serial
    assert all(pid != os.getpid() for _, (_, pid) in results)  # ran in Ray workers
    assert ray.is_initialized()  # a session it did not start is left running


def test_a_failing_task_raises_in_the_caller(local_ray: None) -> None:
    with pytest.raises(Exception, match="three"):
        list(RaySweepExecutor(None, 2).map_unordered(_fail_on_three, [1, 2, 3, 4]))


def test_engine_choice_is_checked() -> None:
    assert isinstance(make_executor(1), SerialExecutor)
    with pytest.raises(ValueError, match="unknown sweep engine"):
        make_executor(2, engine="dask")
    with pytest.raises(ValueError, match="workers"):
        RaySweepExecutor(None, 0)


def test_a_sharded_run_on_ray_equals_the_single_process_run(
    local_ray: None, tmp_path: Path
) -> None:
    """``sim --shards 2 --engine ray``: the shards run as Ray tasks in worker processes;
    metrics and records are those of one process with the same seed."""
    from edgespec.metrics.record_files import RecordFiles
    from edgespec.sim.setup.scenario import scenario_from_dict
    from edgespec.sim.shards import simulate_sharded
    from edgespec.sim.simulator import simulate
    from tests.sim.test_shards import pinned, sorted_rows

    data = pinned()
    with RecordFiles(tmp_path / "single") as files:
        single = simulate(scenario_from_dict(data), sink=files)
    expected = files.finish(single.duration_s, single.num_servers)
    run = simulate_sharded(data, 2, make_executor(2, engine="ray"), tmp_path / "sharded")
    assert run.metrics == expected
    assert [s.cells for s in run.shards] == [(0,), (1, 2)]
    assert run.num_rounds == single.num_rounds
    for name in ("requests.parquet", "batches.parquet"):
        assert sorted_rows(tmp_path / "sharded" / name) == sorted_rows(tmp_path / "single" / name)


class _FlakyRay:
    """``init`` fails with each of ``failures`` in turn, then succeeds."""

    def __init__(self, *failures: str) -> None:
        self.failures = list(failures)
        self.calls: list[str] = []

    def init(self, **options: object) -> None:
        self.calls.append(f"init {options['num_cpus']}")
        if self.failures:
            raise RuntimeError(self.failures.pop(0))

    def shutdown(self) -> None:
        self.calls.append("shutdown")


def test_a_gcs_that_exits_or_a_node_that_times_out_at_start_is_started_once_more() -> None:
    flaky = _FlakyRay("Failed to start GCS.  Last 0 lines of error files")
    start_local_ray(flaky, 3)
    assert flaky.calls == ["init 3", "shutdown", "init 3"]
    twice = _FlakyRay("Failed to start GCS. a", "Failed to start GCS. b")
    with pytest.raises(RuntimeError, match="GCS. b"):
        start_local_ray(twice, 2)
    slow = _FlakyRay("The current node timed out during startup. This could happen because")
    start_local_ray(slow, 2)
    assert slow.calls == ["init 2", "shutdown", "init 2"]
    other = _FlakyRay("Maybe you called ray.init twice by accident?")
    with pytest.raises(RuntimeError, match="twice by accident"):
        start_local_ray(other, 2)
    assert other.calls == ["init 2"]
