"""Job results put back in the jobs' order whatever order the executor finishes them in,
and the local executor choices."""

from __future__ import annotations

import pytest

from edgespec.reproduce.jobs import run_all
from edgespec.sweeps.executor import (
    ProcessPoolSweepExecutor,
    SerialExecutor,
    make_executor,
)
from tests.sweeps.executors import ReversedExecutor


def test_run_all_keeps_the_jobs_order_and_advances_once_per_job() -> None:
    ticks: list[None] = []
    jobs = [lambda v=v: v * 10 for v in range(4)]
    assert run_all(ReversedExecutor(), jobs, lambda: ticks.append(None)) == [0, 10, 20, 30]
    assert len(ticks) == 4
    assert run_all(SerialExecutor(), []) == []


def test_make_executor_local_choices() -> None:
    assert isinstance(make_executor(0), SerialExecutor)
    assert isinstance(make_executor(1), SerialExecutor)
    assert make_executor(3) == ProcessPoolSweepExecutor(3)
    with pytest.raises(ValueError, match="^an address needs the ray engine$"):
        make_executor(2, address="10.0.0.1:6379")
    with pytest.raises(
        ValueError, match=r"^unknown sweep engine 'dask'; known: \['local', 'ray'\]$"
    ):
        make_executor(2, engine="dask")
    with pytest.raises(ValueError, match="^workers must be >= 1, got 0$"):
        ProcessPoolSweepExecutor(0)
    assert ProcessPoolSweepExecutor(1).workers == 1
