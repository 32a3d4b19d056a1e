"""Run a test's Ray work in a child process of its own, bounded in time.

Ray's driver does not belong in a pytest worker: ``ray.init`` installs a SIGTERM handler
that outlives ``ray.shutdown``, and ``ray.wait`` swallows any exception a signal handler
raises (``Exception ignored in: 'ray._raylet.check_signals'``), pytest-timeout's among them,
so a Ray that never schedules a task holds the worker, and the whole suite, until CI kills
it. Here the driver runs in a fresh interpreter in its own process group; the test waits at
most ``timeout_s`` and then kills the group (the driver and the Ray processes it started);
a test process that dies first (pytest-timeout ends a worker) takes the driver with it.
A Ray that did not finish in time is started once more in a new child, as
``start_local_ray`` starts a node once more that did not come up (a loaded 2-core machine);
a child that ends, whatever its exit status, is never run again.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
"""The checkout's root: the child imports ``tests.*`` from here."""

_PR_SET_PDEATHSIG = 1
_prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here, not in the forked child


def _die_with_parent() -> None:
    """In the child before it runs Python: SIGKILL when the test's process dies (pytest-timeout
    ends a worker that way), so a Ray driver is not left running; its Ray processes follow
    their driver."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass(frozen=True, slots=True)
class ChildRun:
    """What the child printed and how it ended."""

    returncode: int
    stdout: str
    stderr: str


class ChildTimeout(AssertionError):
    """The child did not end within its time; its process group was killed."""


def run_child(args: list[str], timeout_s: float) -> ChildRun:
    """``python ARGS`` from the repository root in a new process group; a child still running
    after ``timeout_s`` is killed with its group and :class:`ChildTimeout` names what it had
    printed."""
    child = subprocess.Popen(
        [sys.executable, *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_die_with_parent,  # prctl resolved before the fork: one call in the child
    )
    try:
        stdout, stderr = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(child.pid)
        stdout, stderr = child.communicate()
        raise ChildTimeout(
            f"python {' '.join(args)} ran past {timeout_s:g} s and was killed;"
            f" its stderr ended:\n{stderr[-4000:]}"
        ) from None
    finally:
        _kill_group(child.pid)
    return ChildRun(child.returncode, stdout, stderr)


def _kill_group(pgid: int) -> None:
    """The child's whole group: the child itself when it ran past its time, and any Ray
    processes it left behind (a child killed before its ``ray.shutdown``)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def run_ray_child(args_for: Callable[[int], list[str]], timeout_s: float) -> tuple[int, ChildRun]:
    """:func:`run_child` of ``args_for(0)``, and of ``args_for(1)`` when the first ran past
    ``timeout_s`` (each attempt gets its own arguments, so its own output folder); the
    attempt that ended, and how."""
    try:
        return 0, run_child(args_for(0), timeout_s)
    except ChildTimeout as first:
        try:
            return 1, run_child(args_for(1), timeout_s)
        except ChildTimeout as second:
            raise ChildTimeout(f"twice:\n{first}\n---\n{second}") from None
