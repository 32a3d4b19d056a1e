"""``ThreadPerRun``: each fused run's thread ends with the run, so a burst of runs leaves
no idle threads behind (the ThreadPoolExecutor before it kept every worker it started: a
soak audit saw 17 threads become 72 after 60 fused runs at once, and stay)."""

from __future__ import annotations

import threading

import pytest

from edgespec.runtime.server.run_threads import ThreadPerRun


def _named(prefix: str) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(prefix)]


def test_each_call_runs_on_a_thread_of_its_own_that_ends_with_it() -> None:
    executor = ThreadPerRun("t-burst")
    release = threading.Event()

    def square(k: int) -> int:
        release.wait(10)
        return k * k

    futures = [executor.submit(square, k) for k in range(6)]
    assert sorted(_named("t-burst")) == sorted(f"t-burst_{k}" for k in range(6))
    assert executor.num_threads == 6  # none waits for another's thread
    release.set()
    assert [f.result(timeout=10) for f in futures] == [0, 1, 4, 9, 16, 25]
    executor.shutdown(wait=True)
    assert executor.num_threads == 0 and _named("t-burst") == []


def test_an_error_reaches_the_caller_and_shutdown_refuses_new_calls() -> None:
    executor = ThreadPerRun("t-error")

    def fail() -> None:
        raise ValueError("a fused run failed")

    with pytest.raises(ValueError, match="a fused run failed"):
        executor.submit(fail).result(timeout=10)
    executor.shutdown(wait=True)
    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(print)
