"""A verification server the load generator runs itself (``edgespec serve`` as a child
process on a fixed loopback port), so that a fault can kill it and start it again."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from edgespec.errors import UserInputError
from edgespec.runtime.deferred_signals import signals_deferred


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``edgespec serve ARGS --host 127.0.0.1 --port PORT``, its stderr in ``log_path``
    (``log_kept``: the file outlives the bench, so an error may name it)."""

    def __init__(
        self, args: Sequence[str], port: int, log_path: Path, log_kept: bool = True
    ) -> None:
        self.port = port
        self.address = f"127.0.0.1:{port}"
        self._args = [*args, "--host", "127.0.0.1", "--port", str(port)]
        self._log_path = log_path
        self._log_kept = log_kept
        self._proc: subprocess.Popen[bytes] | None = None
        self.num_starts = 0

    def start(self, timeout_s: float = 180.0) -> float:
        """Start the server and wait until it answers Health; returns the seconds taken.
        A server that exits or stays silent past ``timeout_s`` is a :class:`UserInputError`
        quoting the end of its log."""
        from edgespec.runtime.wire.grpc_client import RemoteVerifier

        t0 = time.monotonic()
        # whole: a signal inside Popen left the server running, its handle never kept
        with open(self._log_path, "ab") as log, signals_deferred():
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "edgespec.cli", "serve", *self._args],
                stdout=log,
                stderr=log,
            )
        self.num_starts += 1
        probe = RemoteVerifier(self.address, timeout_s=2.0)
        try:
            while True:
                if self._proc.poll() is not None:
                    raise UserInputError(
                        f"the verification server exited ({self._proc.returncode}) before it "
                        f"served; the end of its log{self._where()}:\n{self._log_tail()}"
                    )
                with contextlib.suppress(Exception):
                    if probe.health():
                        return time.monotonic() - t0
                if time.monotonic() - t0 > timeout_s:
                    self.kill()
                    raise UserInputError(
                        f"the verification server did not answer within {timeout_s:g} s; the "
                        f"end of its log{self._where()}:\n{self._log_tail()}"
                    )
                time.sleep(0.2)
        finally:
            probe.close_channel()

    def pause(self) -> None:
        """SIGSTOP: the server stops answering; its clients wait on it."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: the server dies with every session and queued call."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def stop(self) -> None:
        """SIGTERM (a clean shutdown), then SIGKILL after 10 s. Not SIGINT: a server started
        by a process that ignores it (a script's background job, a test worker) inherits it
        ignored and keeps it so."""
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.send_signal(signal.SIGTERM)
        self._proc.send_signal(signal.SIGCONT)  # a server paused (pause()) acts on it now
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

    def _where(self) -> str:
        return f" ({self._log_path})" if self._log_kept else ""

    def _log_tail(self, num_lines: int = 15) -> str:
        try:
            lines = self._log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-num_lines:])
