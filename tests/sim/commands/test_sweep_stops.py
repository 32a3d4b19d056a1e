"""``edgespec sim --sweep`` and ``--shards`` on a local process pool stopped by a signal sent
to the driver alone (``kill PID``, not the terminal's whole group): one line on stderr,
the shell's status (SIGTERM 143, SIGINT 130) within seconds, the pool's processes ended
and reaped, the run folder (shard-K folders too) removed. SIGTERM used to leave the workers
waiting forever and an empty folder; SIGINT to run every queued point first, and shards
left ``shard-K/``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.runtime.commands.processes import (  # SIGINT as from a shell
    RUN_CLI,
    SHELL_SIGNALS,
    still_running,
)
from tests.sim.helpers import tiny_scenario

STOPPED_WITHIN_S = 5.0
"""How soon the driver exits after the signal (each point left would run for minutes)."""
WAITED_S = 15.0
"""How long a test waits for the driver to exit and its stderr to close before killing it."""


def _started(
    command: list[str], out: Path, num_workers: int
) -> tuple[subprocess.Popen[str], list[int]]:
    """``edgespec COMMAND --out OUT`` started, once its pool's ``num_workers`` processes run
    (plus a moment for them to take their first points); its process and their pids."""
    driver = subprocess.Popen(
        [sys.executable, "-c", SHELL_SIGNALS + RUN_CLI, *command, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60.0
    workers: list[int] = []
    while len(workers) < num_workers:
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline, "the pool's processes never started"
        time.sleep(0.1)
        workers = [child.pid for child in psutil.Process(driver.pid).children()]
    time.sleep(0.5)
    return driver, workers


def _stopped(
    driver: subprocess.Popen[str], workers: list[int], signum: int
) -> tuple[int, str, float]:
    """Send ``signum`` to the driver alone; its status, stderr and seconds to exit. A driver
    still running, or workers holding its stderr open (the old behaviour), after
    :data:`WAITED_S` are killed, and the status is then ``None``'s stand-in, -1."""
    os.kill(driver.pid, signum)
    sent = time.monotonic()
    try:
        _, err = driver.communicate(timeout=WAITED_S)
    except subprocess.TimeoutExpired:
        for pid in [driver.pid, *still_running(workers)]:
            os.kill(pid, signal.SIGKILL)
        _, err = driver.communicate()
        return -1, err, time.monotonic() - sent
    return driver.returncode, err, time.monotonic() - sent


def _check_stopped(
    driver: subprocess.Popen[str], workers: list[int], signum: int, out: Path
) -> None:
    status, err, took_s = _stopped(driver, workers, signum)
    left = still_running(workers)
    for pid in left:  # the old code's orphans: end them before asserting
        os.kill(pid, signal.SIGKILL)
    said = "interrupted" if signum == signal.SIGINT else "terminated"
    assert status == 128 + signum, err
    assert err.splitlines()[-1] == f"edgespec sim: {said}"
    assert took_s < STOPPED_WITHIN_S, took_s
    assert left == []
    assert not out.exists()


def _long_sweep(tmp_path: Path) -> list[str]:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_scenario(duration_s=1e6)))
    return ["sim", str(path), "--sweep", "seed=1,2,3,4,5,6", "--workers", "2", "--quiet"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_sweep_driver_ends_its_workers_and_removes_the_folder(
    tmp_path: Path, signum: int
) -> None:
    out = tmp_path / "sweep-run"
    driver, workers = _started(_long_sweep(tmp_path), out, 2)
    assert out.is_dir()  # made before the runs
    _check_stopped(driver, workers, signum, out)


def test_sigterm_to_a_sharded_run_removes_the_shard_folders(tmp_path: Path) -> None:
    out = tmp_path / "sharded"
    command = ["sim", "bench-cells", "duration_s=3000", "--shards", "2", "--workers", "2"]
    driver, workers = _started([*command, "--quiet", "--no-plots"], out, 2)
    deadline = time.monotonic() + 30.0
    while not (out / "shard-1").is_dir():  # each shard streaming its records
        assert time.monotonic() < deadline, "no shard folder was made"
        time.sleep(0.1)
    _check_stopped(driver, workers, signal.SIGTERM, out)
