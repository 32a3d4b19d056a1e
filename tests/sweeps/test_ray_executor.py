"""The Ray sweep executor: its checks on a real local Ray (2 CPUs) run in one child process
for the module (tests/sweeps/ray_session.py; tests/ray_child.py says why not in the pytest
worker), each test asserting its check's outcome; its start-up retry on a stand-in Ray."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("ray")

from edgespec.sweeps.executor import SerialExecutor, make_executor
from edgespec.sweeps.ray_executor import RaySweepExecutor, start_local_ray
from tests.ray_child import run_ray_child
from tests.sweeps.ray_session import CHECKS

SESSION_TIMEOUT_S = 120.0
"""The bound on each of the (at most two) attempts: a session takes about 20 s here and 40 s
with every core busy; two attempts stay inside the 300 s each test has (pyproject.toml)."""


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("ray-session")
    _, run = run_ray_child(
        lambda attempt: ["-m", "tests.sweeps.ray_session", str(root / str(attempt))],
        SESSION_TIMEOUT_S,
    )
    assert run.returncode == 0, f"the Ray session failed:\n{run.stderr[-4000:]}"
    found: dict[str, str] = json.loads(run.stdout)
    return found


@pytest.mark.parametrize("check", list(CHECKS))
def test_on_a_local_ray(outcomes: dict[str, str], check: str) -> None:
    assert outcomes[check] == "ok", outcomes[check]


def test_engine_choice_is_checked() -> None:
    assert isinstance(make_executor(1), SerialExecutor)
    with pytest.raises(ValueError, match="unknown sweep engine"):
        make_executor(2, engine="dask")
    with pytest.raises(ValueError, match="workers"):
        RaySweepExecutor(None, 0)


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


class _RayLeavingProcesses(_FlakyRay):
    """As Ray's failed start: ``init`` starts processes (a GCS, a raylet) and then fails,
    keeping no handle on them; the second ``init`` starts one that it keeps."""

    def __init__(self) -> None:
        super().__init__("The current node timed out during startup. This could happen")
        self.started: list[subprocess.Popen[bytes]] = []

    def init(self, **options: object) -> None:
        self.started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
        super().init(**options)


def test_a_failed_start_leaves_nothing_running_for_the_second_one() -> None:
    mine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    leaky = _RayLeavingProcesses()
    try:
        start_local_ray(leaky, 2)
        assert leaky.calls == ["init 2", "shutdown", "init 2"]
        first, second = leaky.started
        assert first.poll() is not None  # what the failed start left (a 60 s sleep): ended
        assert second.poll() is None  # what the second start runs: kept
        assert mine.poll() is None  # a child that was there before: not Ray's
    finally:
        for process in (mine, *leaky.started):
            process.kill()
            process.wait()
