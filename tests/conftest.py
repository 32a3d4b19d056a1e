"""Test-suite wide settings: one torch thread per process, slow tests run only when
EDGESPEC_SLOW=1, the files that take longest first."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
"""One torch thread per process (the runtime's tests also set it in-process): `make test`
runs four workers on two cores, and every worker or `edgespec` process the tests start
would otherwise run one thread per core, each stealing the other's core (a tenth of the
run's wall time on the 2-core machine). Set it before the run to choose otherwise."""

LONGEST_FIRST = (
    "tests/runtime/backends/test_stochastic.py",
    "tests/runtime/server/test_lossless_batching.py",
    "tests/tools/test_gpu_check.py",
    "tests/runtime/loadgen/test_bench_serve.py",
    "tests/reproduce/wisp/test_runs.py",
    "tests/reproduce/wisp/test_serving_errors.py",
    "tests/reproduce/dsd/test_runs.py",
    "tests/runtime/commands/test_command_signals.py",
    "tests/calibration/test_profile_models.py",
    "tests/runtime/commands/test_endpoint_start_wait.py",
    "tests/sim/test_handler_sets.py",
    "tests/runtime/commands/test_commands.py",
    "tests/calibration/test_profile_fit_warning.py",
    "tests/runtime/loadgen/test_server_passes.py",
    "tests/runtime/edge/test_deadline_resend.py",
    "tests/reproduce/dsd/test_real_pair_run.py",
    "tests/calibration/test_calibration.py",
    "tests/reproduce/zhu/test_runs.py",
    "tests/runtime/backends/test_llamacpp_lossless.py",
    "tests/calibration/test_calibration_resume.py",
    "tests/sweeps/test_ray_executor.py",
)
"""The test files that take longest (``pytest --durations``), in that order. `make test`
spreads files over four workers (pytest-xdist, ``--dist loadfile``), each taking the next
file when it is done: started first, these do not leave one worker running alone at the
end. Order only; every test runs either way."""


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: the order within a file and among the rest is kept
    if os.environ.get("EDGESPEC_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow test: set EDGESPEC_SLOW=1 to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


_NEXT_CACHE = itertools.count()


@pytest.fixture(scope="session")
def _sweeps_caches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sweeps-caches")


@pytest.fixture(autouse=True)
def _own_sweeps_cache(_sweeps_caches: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's stopped sweeps keep their points in a folder of its own
    (edgespec.sweeps.kept_points), not the user's cache, where tests on other workers
    running the same sweep would share them (and the `edgespec` processes a test starts
    inherit it). Named here, made by the first sweep that keeps a point (private_folder):
    ``mktemp`` per test listed the whole temporary root each time."""
    monkeypatch.setenv("EDGESPEC_SWEEPS_CACHE", str(_sweeps_caches / str(next(_NEXT_CACHE))))
