"""``edgespec draft --prompt`` and ``edgespec serve`` stopped by SIGTERM (``kill PID``,
systemd, ``docker stop``) and Ctrl-C, in processes of their own.

``draft --prompt`` died at once on SIGTERM (exit -15), its session left open on the server
until ``session_timeout_s``; ``serve`` stopped in silence with exit 0 on both. Each now
says one line and exits 128 + the signal's number, as ``drafting-server`` does. A second
Ctrl-C while ``draft --prompt`` closes its session is said and waits for the close."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from edgespec.runtime.commands.signals import signals_held
from edgespec.runtime.loadgen.server_process import free_port
from edgespec.runtime.wire.server_thread import ServerThread
from tests.runtime.commands.processes import Command, open_sessions


def test_sigterm_mid_prompt_closes_the_session_and_exits_143(
    server: ServerThread, model_dir: Path, tmp_path: Path
) -> None:
    args = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", str(model_dir),
            "--prompt", "w5 w6 w7", "--max-new-tokens", "1000",
            "--link-rtt-ms", "200"]  # fmt: skip
    command = Command(args, tmp_path / "stderr")
    try:
        command.wait_for(r"\] ready$")
        time.sleep(1.0)  # a few rounds of about 200 in
        command.process.send_signal(signal.SIGTERM)
        assert command.stopped(30) == 143
    finally:
        command.kill()
    assert command.lines[-1] == "edgespec draft: terminated"
    assert not any("Traceback" in line for line in command.lines)
    assert open_sessions(f"127.0.0.1:{server.port}") == 0
    shown = command.out.read_text()  # the output cut short ends its line before stderr's
    assert shown.strip() and shown.endswith("\n") and not shown.endswith("\n\n")


SLOW_CLOSE = (
    "import time; from edgespec.runtime.wire import grpc_client; "
    "close = grpc_client.RemoteVerifier.close; "
    "grpc_client.RemoteVerifier.close = lambda self, session_id: (print('closing', "
    "file=sys.stderr, flush=True), time.sleep(3), close(self, session_id))[-1]; "
)
"""The client's close slowed by 3 s, said as it starts: a second Ctrl-C lands in it."""


def test_a_second_ctrl_c_while_the_session_closes_is_said_and_the_close_finishes(
    server: ServerThread, model_dir: Path, tmp_path: Path
) -> None:
    """The second Ctrl-C cut the close short: the session stayed open on the server until
    its session_timeout_s (300 s by default)."""
    args = ["draft", "--server", f"127.0.0.1:{server.port}", "--draft", str(model_dir),
            "--prompt", "w5 w6 w7", "--max-new-tokens", "1000",
            "--link-rtt-ms", "200"]  # fmt: skip
    command = Command(args, tmp_path / "stderr", prelude=SLOW_CLOSE)
    try:
        command.wait_for(r"\] ready$")
        time.sleep(1.0)  # a few rounds of about 200 in
        command.process.send_signal(signal.SIGINT)
        command.wait_for(r"^closing$")
        command.process.send_signal(signal.SIGINT)
        assert command.stopped(30) == 130
    finally:
        command.kill()
    left = open_sessions(f"127.0.0.1:{server.port}")
    assert (left, command.lines[-3:]) == (0, [
        "closing",
        "edgespec draft: SIGINT while closing its session on the server, which goes on (at "
        "most 2 s)",
        "edgespec draft: interrupted",
    ])  # fmt: skip
    assert not any("Traceback" in line for line in command.lines)


def test_a_signal_in_a_held_close_is_delivered_after_it_unless_a_stop_is_under_way(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ctrl-C during a close on the way out (a stop under way) is said and ignored; during a
    close mid-run, said and delivered once the close is done, not lost."""
    done: list[str] = []
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # xdist ignores it
    try:
        with pytest.raises(KeyboardInterrupt), signals_held("draft", "closing", 5.0):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            done.append("mid-run")
        try:
            raise KeyboardInterrupt  # the first Ctrl-C
        except KeyboardInterrupt:
            with signals_held("draft", "closing", 5.0):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
                done.append("stopping")
    finally:
        restored = signal.signal(signal.SIGINT, previous)
    assert (done, restored) == (["mid-run", "stopping"], signal.default_int_handler)
    said = "edgespec draft: SIGINT while closing, which goes on (at most 5 s)"
    assert capsys.readouterr().err.splitlines() == [said, said]


# Sends SIGTERM the moment the gRPC server has started, before the listening line: it raised
# past the running server, which complained as the process exited ("Exception ignored in
# Server.__del__ ... Event loop is closed"), and the listening line was never written.
TERM_AS_IT_STARTS = """
import os, signal
import edgespec.runtime.wire.grpc_server as grpc_server
start_server = grpc_server.start_server
async def started(*args, **kwargs):
    server = await start_server(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGTERM)
    return server
grpc_server.start_server = started
"""


@pytest.mark.parametrize(
    ("sig", "status", "said", "prelude"),
    [
        (signal.SIGTERM, 143, "terminated", TERM_AS_IT_STARTS),
        (signal.SIGINT, 130, "interrupted", ""),
    ],
)
def test_serve_says_why_it_stopped_and_exits_with_the_signals_status(
    sig: signal.Signals, status: int, said: str, prelude: str, model_dir: Path, tmp_path: Path
) -> None:
    """Stopped while it serves (Ctrl-C) or as its server starts (SIGTERM): the server
    stops, one line, the signal's status, nothing else on stderr after ``ready``."""
    port = free_port()
    args = ["serve", "--target", str(model_dir), "--host", "127.0.0.1", "--port", str(port),
            "--threads", "1"]  # fmt: skip
    command = Command(args, tmp_path / "stderr", prelude=prelude)
    try:
        command.wait_for(f"listening on 127.0.0.1:{port}", stdout=True)
        if not prelude:
            command.process.send_signal(sig)
        assert command.stopped(30) == status
    finally:
        command.kill()
    lines = command.lines
    ready = next(at for at, line in enumerate(lines) if line.endswith("] ready"))
    assert lines[ready + 1 :] == [f"edgespec serve: {said}"]


def test_serve_started_ignoring_sigint_keeps_ignoring_it_and_stops_on_sigterm(
    model_dir: Path, tmp_path: Path
) -> None:
    """A shell without job control (a script's ``edgespec serve &``) starts it with SIGINT
    ignored: ``serve`` installed its own handler over that, so a Ctrl-C meant for the
    script stopped the server, unlike every other command, which keeps the signal ignored."""
    port = free_port()
    args = ["serve", "--target", str(model_dir), "--host", "127.0.0.1", "--port", str(port),
            "--threads", "1"]  # fmt: skip
    ignoring = "signal.signal(signal.SIGINT, signal.SIG_IGN); "
    command = Command(args, tmp_path / "stderr", prelude=ignoring)
    try:
        command.wait_for(f"listening on 127.0.0.1:{port}", stdout=True)
        command.process.send_signal(signal.SIGINT)
        time.sleep(1.0)
        assert command.process.poll() is None, command.lines
        command.process.send_signal(signal.SIGTERM)
        assert command.stopped(30) == 143
    finally:
        command.kill()
    lines = command.lines
    ready = next(at for at, line in enumerate(lines) if line.endswith("] ready"))
    assert lines[ready + 1 :] == ["edgespec serve: terminated"]


class _Stopped(Exception):
    """What this test's own SIGTERM handler raises (the default one would end pytest)."""


def test_sigterm_while_the_target_loads_is_one_line_and_143(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It ended the process at once, without a line (Ctrl-C said ``interrupted``)."""
    from edgespec.cli import main
    from edgespec.runtime.commands import serve as serve_command

    def loading(*args: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)  # the signal's exception ends this first
        raise AssertionError("SIGTERM did not stop the load")

    def ours(signum: int, frame: object) -> None:
        raise _Stopped

    monkeypatch.setattr(serve_command, "load_target", loading)
    previous = signal.signal(signal.SIGTERM, ours)
    try:
        status = main(["serve", "--target", str(model_dir), "--port", "0"])  # 50051 may be taken
    except _Stopped:
        pytest.fail("the command left SIGTERM to the handler it found")
    finally:
        restored = signal.signal(signal.SIGTERM, previous)
    assert status == 143 and restored is ours
    assert capsys.readouterr().err.splitlines()[-1] == "edgespec serve: terminated"


def test_bench_serve_stopped_by_sigterm_stops_its_processes_and_says_terminated(
    tmp_path: Path,
) -> None:
    """It exited 143 through ``SystemExit``, without the line every other command says."""
    args = ["bench", "serve", "--synthetic-layers", "2", "--synthetic-hidden", "32",
            "--clients", "2", "--procs", "2", "--duration-s", "300",
            "--max-new-tokens", "8"]  # fmt: skip
    command = Command(args, tmp_path / "stderr")
    try:
        command.wait_for(r"distributed: 2 clients in 2 processes")
        bench = psutil.Process(command.process.pid)
        deadline = time.monotonic() + 60
        while len(bench.children()) < 3 and time.monotonic() < deadline:  # server, 2 clients
            time.sleep(0.1)
        started = bench.children(recursive=True)
        assert len(started) >= 3, command.lines
        command.process.send_signal(signal.SIGTERM)
        assert command.stopped(60) == 143
    finally:
        command.kill()
    assert command.lines[-1] == "edgespec bench serve: terminated"
    assert not any("Traceback" in line for line in command.lines)
    deadline = time.monotonic() + 10  # multiprocessing's resource tracker ends on its own
    while (alive := [p.pid for p in started if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive == []


def _alive(process: psutil.Process) -> bool:
    """Whether ``process`` still runs (a zombie left to its new parent does not)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
