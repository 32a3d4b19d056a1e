"""``edgespec bench serve`` stopped by SIGTERM or Ctrl-C while it starts a client process:
the start is done whole, then the signal acts (the processes stopped, one line, 143 or
130). It came inside ``Process.start()``, after the child was started and before the
parent wrote the child's start data to it: the parent closed that pipe, and the child's
``EOFError: Ran out of input`` traceback was the run's last line (a child left running until
then). Here the signal is sent from inside the real start, at that very point
(:mod:`tests.runtime.child_starts`)."""

from __future__ import annotations

import gc
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.child_starts import children_left, signal_inside_starts
from tests.runtime.commands.processes import still_running


@pytest.mark.parametrize(
    ("sig", "status", "said"),
    [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")],
)
def test_a_signal_while_a_client_process_starts_stops_the_run_whole(
    server: ServerThread, sig: signal.Signals, status: int, said: str,
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    starts = signal_inside_starts(monkeypatch, sig)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # xdist ignores it
    try:
        code = main(["bench", "serve", "--server", f"127.0.0.1:{server.port}",
                     "--clients", "2", "--procs", "2", "--duration-s", "30"])  # fmt: skip
    finally:
        signal.signal(signal.SIGINT, previous)
    gc.collect()  # a start cut short: its pipe closed once its Popen is collected
    left = children_left()
    err = capfd.readouterr().err
    started = (starts.num_signalled, len(starts.finished_pids))
    assert (code, started, left) == (status, (1, 1), []), err
    assert "Traceback" not in err, err
    assert err.splitlines()[-1] == f"edgespec bench serve: {said}"


def test_a_signal_while_the_bench_server_starts_leaves_it_stoppable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bench's own server's start (a ``Popen``) is whole too: a signal inside it left
    the server process running, its handle never kept, so the bench's stop missed it."""
    import subprocess

    from edgespec.runtime.commands.signals import Terminated, sigterm_raises
    from edgespec.runtime.loadgen.server_process import ServerProcess, free_port

    spawned: list[int] = []
    fork_exec = subprocess._fork_exec  # type: ignore[attr-defined]

    def signalled_fork_exec(*args: Any) -> int:
        pid: int = fork_exec(*args)
        spawned.append(pid)
        os.kill(os.getpid(), signal.SIGTERM)
        return pid

    monkeypatch.setattr(subprocess, "_fork_exec", signalled_fork_exec)
    server = ServerProcess(["--target", "synthetic"], free_port(), tmp_path / "server.log")
    with pytest.raises(Terminated), sigterm_raises():
        server.start()
    server.kill()  # what the bench's stop does with it
    left = still_running(spawned)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert (len(spawned), left) == (1, [])
