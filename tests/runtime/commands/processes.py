"""Commands run as processes of their own, to be stopped by a signal as a shell, systemd or
``docker stop`` stops them: a command started with Ctrl-C delivered as a shell delivers it,
its stderr read as it comes, and the sessions a verification server still holds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import psutil

from edgespec.runtime.wire.grpc_client import RemoteVerifier
from tests.runtime.commands import zygote
from tests.runtime.commands.zygote import ZygoteProcess

ROOT = Path(__file__).resolve().parents[2]

# A pytest-xdist worker runs with SIGINT ignored, and its children would inherit that: the
# command runs as started from a shell, where Ctrl-C raises KeyboardInterrupt.
SHELL_SIGNALS = "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
RUN_CLI = "from edgespec.cli import console_main; sys.exit(console_main(sys.argv[1:]))"


class Command:
    """``edgespec ARGS`` in a process of its own, its stderr in ``log`` (its stdout beside it,
    ``log`` with ``.out`` added); ``prelude``: Python statements run before the command;
    ``env``: its environment (this process's by default). Forked from the worker's zygote
    (:mod:`tests.runtime.commands.zygote`), unless ``EDGESPEC_TEST_FRESH_PROCESSES=1``."""

    def __init__(
        self, args: list[str], log: Path, prelude: str = "", env: dict[str, str] | None = None
    ) -> None:
        self.log, self.out = log, log.with_name(log.name + ".out")
        code = SHELL_SIGNALS + prelude + RUN_CLI
        env = dict(os.environ) if env is None else env
        self.process: subprocess.Popen[bytes] | ZygoteProcess
        if os.environ.get("EDGESPEC_TEST_FRESH_PROCESSES") != "1":
            log.write_bytes(b""), self.out.write_bytes(b"")  # there as the command starts
            self.process = zygote.start(code, args, self.out, log, env)
            return
        with log.open("wb") as stderr, self.out.open("wb") as stdout:
            self.process = subprocess.Popen([sys.executable, "-c", code, *args], stdout=stdout,
                                            stderr=stderr, cwd=ROOT, env=env)  # fmt: skip

    @property
    def lines(self) -> list[str]:
        """Its stderr's lines so far."""
        return self.log.read_text(errors="replace").splitlines()

    def wait_for(
        self, pattern: str, timeout_s: float = 120.0, stdout: bool = False
    ) -> re.Match[str]:
        """The first line of stderr (``stdout``: of stdout) that matches ``pattern``, once
        it is written."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in (self.out if stdout else self.log).read_text(errors="replace").splitlines():
                if found := re.search(pattern, line):
                    return found
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r}; stderr:\n{self.log.read_text()}")

    def stopped(self, timeout_s: float) -> int:
        """The exit status, once it exits within ``timeout_s`` (else the test fails)."""
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"still running after {timeout_s} s; stderr:\n"
                                 f"{self.log.read_text()}") from None  # fmt: skip

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def still_running(pids: Iterable[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie not reaped yet has ended)."""
    running = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                running.append(pid)
        except psutil.NoSuchProcess:
            continue
    return running


def open_sessions(address: str, settle_s: float = 5.0) -> int:
    """The sessions the server at ``address`` holds, given ``settle_s`` for closes under way
    to land."""
    probe = RemoteVerifier(address, timeout_s=10.0)
    try:
        deadline = time.monotonic() + settle_s
        while (num := probe.stats().num_sessions) and time.monotonic() < deadline:
            time.sleep(0.1)
        return int(num)
    finally:
        probe.close_channel()
