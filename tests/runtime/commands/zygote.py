"""``edgespec`` processes for the tests, forked from one process per test worker that has
imported the program and its heavy modules (torch, transformers, gRPC) once: a process
started afresh spent about 4 of its 5-6 CPU seconds importing them, and the suite starts
dozens. The zygote is single-threaded (nothing runs in it but its loop), so a fork of it is
as safe as a fresh start.

Each command is a child of a waiter, itself forked from the zygote: the waiter sends the
command's pid, waits for it and sends its exit status (as ``Popen.returncode`` says it,
negative for a signal) on a socket the test holds. The command's own process runs the
``-c`` code a fresh interpreter would (its stdout and stderr in files, its working folder
and environment the test's), and ends as that interpreter would: its ``SystemExit`` or
exception unwinds to the top, and the interpreter finalizes (atexit, collection, what a
server's ``__del__`` says) before the process exits.

``EDGESPEC_TEST_FRESH_PROCESSES=1`` starts every command afresh instead."""

from __future__ import annotations

import atexit
import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PRELOADED = (
    "torch",
    "transformers",
    "grpc",
    "edgespec.cli",
    "edgespec.runtime.commands.serve",
    "edgespec.runtime.commands.draft",
    "edgespec.runtime.backends.transformers_backend",
    "edgespec.runtime.openai_api.app",
    "transformers.models.llama.modeling_llama",
)
"""What the zygote imports before it forks anything: what every command imports."""

_INT = struct.Struct("!i")


@dataclass(frozen=True, slots=True)
class Start:
    """One command to start: ``python -c code args...`` as a fresh interpreter runs it."""

    code: str
    args: tuple[str, ...]
    stdout: str
    stderr: str
    cwd: str
    env: dict[str, str]


class ZygoteProcess:
    """The ``subprocess.Popen`` calls the tests make of a command forked from the zygote:
    ``pid``, ``poll``, ``wait``, ``send_signal``, ``kill``; ``returncode`` as Popen's."""

    def __init__(self, status: socket.socket) -> None:
        self._status = status
        self.pid = _INT.unpack(_read(status, _INT.size, 60.0))[0]
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._status], [], [], 0)[0]:
            self.returncode = _INT.unpack(_read(self._status, _INT.size, 10.0))[0]
            self._status.close()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired("edgespec", timeout or 0.0)
            select.select([self._status], [], [], left)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _read(sock: socket.socket, size: int, timeout_s: float) -> bytes:
    sock.settimeout(timeout_s)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise AssertionError("the zygote's waiter ended before saying the command's status")
        data += chunk
    return data


_zygote: tuple[subprocess.Popen[bytes], socket.socket] | None = None


def start(
    code: str, args: list[str], stdout: Path, stderr: Path, env: dict[str, str]
) -> ZygoteProcess:
    """``python -c code args...`` forked from this worker's zygote (started the first time),
    in the environment ``env`` (what the zygote imported read the worker's as it started)."""
    global _zygote
    if _zygote is None or _zygote[0].poll() is not None:
        ours, theirs = socket.socketpair()
        process = subprocess.Popen(
            [sys.executable, "-c", f"from tests.runtime.commands.zygote import serve; "
             f"serve({theirs.fileno()})"],
            pass_fds=[theirs.fileno()], cwd=ROOT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        theirs.close()
        _zygote = (process, ours)
        atexit.register(_stop, process, ours)
    request = Start(code, tuple(args), str(stdout), str(stderr), str(ROOT), env)
    status, theirs = socket.socketpair()
    body = pickle.dumps(request)
    message = _INT.pack(len(body)) + body
    sent = socket.send_fds(_zygote[1], [message], [theirs.fileno()])
    _zygote[1].sendall(message[sent:])  # the rest, where one message did not take it all
    theirs.close()
    return ZygoteProcess(status)


def _stop(process: subprocess.Popen[bytes], ours: socket.socket) -> None:
    ours.close()  # the zygote's loop ends on it
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def serve(fd: int) -> None:
    """The zygote's loop: import :data:`PRELOADED`, then fork a waiter for each request
    until the test worker's end of ``fd`` closes. In a command's process this returns
    nothing: it runs the command and ends the interpreter."""
    import importlib

    for module in PRELOADED:
        importlib.import_module(module)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # waiters are reaped as they end
    requests = socket.socket(fileno=fd)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(requests, 1 << 20, 1)
        except ConnectionResetError:
            return
        if not message:
            return
        size = _INT.unpack(message[: _INT.size])[0]
        body = message[_INT.size :]
        while len(body) < size:
            if not (chunk := requests.recv(size - len(body))):
                return
            body += chunk
        request: Start = pickle.loads(body)
        if os.fork() == 0:
            requests.close()
            _wait_for_command(request, fds[0])  # returns in the command's process only
            _run(request)
            return
        os.close(fds[0])


def _wait_for_command(request: Start, status_fd: int) -> None:
    """The waiter: fork the command, send its pid and then its exit status on
    ``status_fd``, and exit; returns in the command's process."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        os.close(status_fd)
        return
    try:
        os.write(status_fd, _INT.pack(pid))
        _, status = os.waitpid(pid, 0)
        os.write(status_fd, _INT.pack(os.waitstatus_to_exitcode(status)))
    finally:
        os._exit(0)


def _run(request: Start) -> None:
    """In the command's process: the files, folder and environment the test gave, then
    the code, as ``python -c`` runs it (its ``SystemExit`` ends the interpreter)."""
    for path, fd in ((request.stdout, 1), (request.stderr, 2)):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    sys.argv = ["-c", *request.args]
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(compile(request.code, "<string>", "exec"), namespace)
