"""A signal sent from inside a child process's start (:mod:`edgespec.runtime.child_processes`),
at its most fragile point: the fork server has forked the child, and the parent has not yet
written the child's start data to it. A start cut short there closed the pipe: the child
died of ``EOFError: Ran out of input`` (its traceback on the fork server's stderr), or was
left running, its process never ended by the stop."""

from __future__ import annotations

import contextlib
import multiprocessing.forkserver
import multiprocessing.popen_forkserver
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any

import psutil
import pytest

from tests.runtime.commands.processes import still_running


@dataclass(slots=True)
class Starts:
    """The child starts a signal was sent inside, and the pids of those that were done
    whole (their start data written, their child's pid read back)."""

    num_signalled: int = 0
    finished_pids: list[int] = field(default_factory=list)


def signal_inside_starts(monkeypatch: pytest.MonkeyPatch, sig: signal.Signals) -> Starts:
    """Each child's start sends ``sig`` to this process right after the child is forked,
    before its start data is written; returns what the starts did."""
    starts = Starts()
    connect = multiprocessing.forkserver.connect_to_new_process
    launch = multiprocessing.popen_forkserver.Popen._launch  # type: ignore[attr-defined]

    def signalled_connect(fds: Any) -> Any:
        connected = connect(fds)
        starts.num_signalled += 1
        os.kill(os.getpid(), sig)
        return connected

    def whole_launch(popen: Any, process: Any) -> None:
        launch(popen, process)
        starts.finished_pids.append(popen.pid)

    monkeypatch.setattr(multiprocessing.forkserver, "connect_to_new_process", signalled_connect)
    monkeypatch.setattr(multiprocessing.popen_forkserver.Popen, "_launch", whole_launch)
    return starts


def fork_server_pid() -> int:
    """The pid of this process's fork server (started by its first child's start)."""
    pid = multiprocessing.forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    assert isinstance(pid, int), "no fork server has started"
    return pid


def children_left(timeout_s: float = 30.0) -> list[int]:
    """The fork server's children still running ``timeout_s`` after this is called (each
    then killed, so none outlives the test); [] once they have all ended."""
    deadline = time.monotonic() + timeout_s
    alive = _running_children()
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = _running_children()
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return alive


def _running_children() -> list[int]:
    try:
        children = psutil.Process(fork_server_pid()).children()
    except psutil.NoSuchProcess:
        return []
    return still_running(child.pid for child in children)
