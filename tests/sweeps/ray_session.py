"""The Ray sweep executor's checks on a real local Ray (2 CPUs), run by
``tests/sweeps/test_ray_executor.py`` as ``python -m tests.sweeps.ray_session OUT`` in a
process of its own (tests/ray_child.py says why). One Ray session serves every check; each
check's outcome ("ok" or its traceback) is printed as one JSON object on stdout; the
checks write their files under ``OUT``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import ray

from edgespec.config import ConfigError
from edgespec.policies.interfaces import WindowDecision, WindowObservation
from edgespec.sweeps.executor import SerialExecutor, make_executor
from edgespec.sweeps.ray_executor import RaySweepExecutor, check_address, start_local_ray


def _square_with_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three")
    return x


def results_equal_the_serial_executor(out: Path) -> None:
    items = list(range(9))
    serial = dict(SerialExecutor().map_unordered(lambda x: x * x, items))
    executor = make_executor(2, engine="ray")
    assert isinstance(executor, RaySweepExecutor)
    results = list(executor.map_unordered(_square_with_pid, items))
    assert sorted(i for i, _ in results) == items  # every index exactly once
    assert {i: r[0] for i, r in results} == serial
    assert all(pid != os.getpid() for _, (_, pid) in results)  # ran in Ray workers
    assert ray.is_initialized()  # a session it did not start is left running


def _config_error_on_three(x: int) -> int:
    if x == 3:
        raise ConfigError("seed", "must be >= 0, got -3")
    return x


def a_failing_task_raises_its_own_error_in_the_caller(out: Path) -> None:
    """Not Ray's RayTaskError, whose text is the worker's traceback in colour: the error
    the task raised, as a serial run raises it."""
    for fn, kind, text in (
        (_fail_on_three, ValueError, "three"),
        (_config_error_on_three, ConfigError, "config field 'seed': must be >= 0, got -3"),
    ):
        try:
            list(RaySweepExecutor(None, 2).map_unordered(fn, [1, 2, 3, 4]))
        except Exception as exc:
            assert (type(exc), str(exc)) == (kind, text), (type(exc), str(exc))
        else:
            raise AssertionError("a task that raised did not raise in the caller")


@dataclass(frozen=True, slots=True)
class _DriverOnlyWindow:
    may_fuse: ClassVar[bool] = False

    def next_window(self, obs: WindowObservation) -> WindowDecision:
        return WindowDecision(3)


def a_policy_registered_in_the_driver_only_is_said_as_one_line(out: Path) -> None:
    """``edgespec sim --sweep ... --engine ray`` naming a window policy this process
    registered by assignment: the pre-run checks pass here, the workers do not know it."""
    from edgespec.cli import main
    from edgespec.policies.registry import WINDOW

    WINDOW["mine"] = _DriverOnlyWindow
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            code = main(
                [
                    *("sim", "policies.window.name=mine", "duration_s=1", "--quiet"),
                    *("--no-plots", "--out", str(out / "run"), "--sweep", "seed=1,2"),
                    *("--engine", "ray", "--workers", "2"),
                ]
            )
    finally:
        del WINDOW["mine"]
    said = [  # the point that fails first, either of the two
        "edgespec sim: config field 'policies.window.name': "
        f"at sweep point {n} of 2 (seed={n}): unknown window policy 'mine'; "
        "known: ['awc', 'dynamic', 'static'] (window policy 'mine' is registered in the "
        "driver only: Ray's workers import edgespec's policy registry afresh; add it to "
        "edgespec/policies/registry.py, or run with --engine local)\n"
        for n in (1, 2)
    ]
    assert code == 2 and stderr.getvalue() in said, stderr.getvalue()


def a_sharded_run_equals_the_single_process_run(out: Path) -> None:
    """``sim --shards 2 --engine ray``: the shards run as Ray tasks in worker processes;
    metrics and records are those of one process with the same seed."""
    from edgespec.metrics.record_files import RecordFiles
    from edgespec.sim.setup.scenario import scenario_from_dict
    from edgespec.sim.shards import simulate_sharded
    from edgespec.sim.simulator import simulate
    from tests.sim.test_shards import pinned, sorted_rows

    data = pinned()
    with RecordFiles(out / "single") as files:
        single = simulate(scenario_from_dict(data), sink=files)
    expected = files.finish(single.duration_s, single.num_servers)
    run = simulate_sharded(data, 2, make_executor(2, engine="ray"), out / "sharded")
    assert run.metrics == expected
    assert [s.cells for s in run.shards] == [(0,), (1, 2)]
    assert run.num_rounds == single.num_rounds
    for name in ("requests.parquet", "batches.parquet"):
        assert sorted_rows(out / "sharded" / name) == sorted_rows(out / "single" / name)


def a_real_gcs_passes_the_address_check(out: Path) -> None:
    """The gRPC handshake of ``check_address`` (tests/sweeps/test_ray_address.py) is
    answered by Ray's own GCS, at its address and as ``ray://`` names it."""
    address = ray.get_runtime_context().gcs_address
    check_address(address)
    check_address(f"ray://{address}")


CHECKS: dict[str, Callable[[Path], None]] = {
    check.__name__: check
    for check in (
        results_equal_the_serial_executor,
        a_failing_task_raises_its_own_error_in_the_caller,
        a_policy_registered_in_the_driver_only_is_said_as_one_line,
        a_sharded_run_equals_the_single_process_run,
        a_real_gcs_passes_the_address_check,
    )
}


def main(out: Path) -> None:
    outcomes: dict[str, str] = {}
    start_local_ray(ray, 2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        for name, check in CHECKS.items():
            (out / name).mkdir(parents=True)
            try:
                check(out / name)
                outcomes[name] = "ok"
            except Exception:
                outcomes[name] = traceback.format_exc()
    finally:
        ray.shutdown()
    print(json.dumps(outcomes))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
