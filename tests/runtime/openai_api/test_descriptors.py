"""Connections are capped by the open-file limit, which the serving command raises as it
starts; a process out of descriptors answers 503, not a timeout, and logs its failed
``accept()`` calls in one line, not a traceback each (before: 50 MB of log in 20 s)."""

from __future__ import annotations

import logging
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgespec.runtime.openai_api import descriptors
from edgespec.runtime.openai_api.descriptors import (
    ACCEPTING_FDS,
    SPARE_FDS,
    AcceptErrorLog,
    FileBudget,
    connection_cap,
    file_budget,
    raise_open_file_limit,
)
from edgespec.runtime.openai_api.serve import connections_told

RESERVED = 10 + ACCEPTING_FDS + SPARE_FDS


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """An open-file limit of (1024, 4096), 10 descriptors open; what is set is recorded,
    never applied."""
    current = [(1024, 4096)]
    monkeypatch.setattr(resource, "getrlimit", lambda which: current[-1])
    monkeypatch.setattr(resource, "setrlimit", lambda which, new: current.append(new))
    monkeypatch.setattr(descriptors, "open_fds", lambda: 10)
    return current


def test_connections_are_capped_by_the_soft_open_file_limit(
    limits: list[tuple[int, int]],
) -> None:
    assert file_budget(1024) == FileBudget(1024, RESERVED, 1024 - RESERVED)
    assert file_budget(3) == FileBudget(1024, RESERVED, 3)
    limits.append((resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert file_budget(1024) == FileBudget(None, RESERVED, 1024)
    assert connection_cap(1024, 4096, RESERVED) == FileBudget(4096, RESERVED, 1024)
    with pytest.raises(OSError) as info:
        connection_cap(1024, 300, RESERVED)
    assert str(info.value) == (
        "the open-file limit (RLIMIT_NOFILE) is 300 and this process keeps 330 descriptors "
        "for itself: no room for HTTP connections; raise it (ulimit -n)"
    )


def test_the_soft_limit_is_raised_to_what_is_needed_within_the_hard_limit(
    limits: list[tuple[int, int]], caplog: pytest.LogCaptureFixture
) -> None:
    assert raise_open_file_limit(1024) == (1024, 1024 + RESERVED)
    assert limits[-1] == (1024 + RESERVED, 4096)
    assert raise_open_file_limit(1024) is None  # room enough now
    limits.append((512, 1100))
    assert raise_open_file_limit(1024) == (512, 1100)
    assert file_budget(1024) == FileBudget(1100, RESERVED, 1100 - RESERVED)
    limits.append((1100, 1100))
    assert raise_open_file_limit(1024) is None  # at the hard limit already


def test_a_refused_raise_is_logged_and_the_limit_kept(
    limits: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    def refuse(which: int, new: tuple[int, int]) -> None:
        raise ValueError("not allowed to raise maximum limit")

    monkeypatch.setattr(resource, "setrlimit", refuse)
    with caplog.at_level(logging.WARNING, logger=descriptors.__name__):
        assert raise_open_file_limit(1024) is None
    assert caplog.messages == [
        "could not raise the open-file limit from 1024 to 1354: not allowed to raise maximum limit"
    ]


def test_the_start_up_line_tells_the_cap_and_a_raised_limit() -> None:
    assert connections_told(FileBudget(1354, 330, 1024), (1024, 1354)) == (
        "at most 1024 connections; open-file limit raised from 1024 to 1354"
    )
    assert connections_told(FileBudget(1024, 330, 694), None) == (
        "at most 694 connections (the open-file limit 1024 less 330 kept for the process)"
    )


class _Loop:
    def __init__(self) -> None:
        self.passed: list[dict[str, object]] = []

    def default_exception_handler(self, context: dict[str, object]) -> None:
        self.passed.append(context)


def test_failed_accepts_are_logged_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    handler = AcceptErrorLog(interval_s=10.0, clock=lambda: now[0])
    loop = _Loop()
    emfile = {"message": "socket.accept() out of system resource",
              "exception": OSError(24, "Too many open files")}  # fmt: skip
    with caplog.at_level(logging.WARNING, logger=descriptors.__name__):
        for second in range(25):  # 2,500 failed accept() calls over 25 s
            now[0] = float(second)
            for _ in range(100):
                handler(loop, emfile)
    assert len(caplog.records) == 3  # at 0, 10 and 20 s
    assert caplog.messages[1].startswith(
        "the OpenAI-compatible endpoint could not accept connections: Too many open files "
        "(1000 failed accept() calls since the last such line; the open-file limit is "
    )
    assert all(record.exc_info is None for record in caplog.records)
    other = {"message": "something else", "exception": ValueError("x")}
    handler(loop, other)
    assert loop.passed == [other]


SERVER = """
import os, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[2]), int(sys.argv[2])))
from fastapi import FastAPI
from edgespec.runtime.openai_api.serve import ApiThread
app = FastAPI()
app.get("/health")(lambda: {"status": "ok"})
server = ApiThread(app, "127.0.0.1").start()
held = []
while sys.argv[1] == "exhaust":  # another part of the process took every descriptor
    try:
        held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        break
print(server.port, server.budget.max_connections, flush=True)
server.wait()
"""
HEALTH = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"


def _serve_under(soft_limit: int, mode: str, log: Path) -> tuple[subprocess.Popen[bytes], int, int]:
    """The endpoint in a process whose open-file limit is ``soft_limit``, set by the process
    itself: a ``preexec_fn`` forks this one, whose gRPC (other tests' clients) then writes
    its fork warning into the child's stderr, the log under test."""
    with log.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-c", SERVER, mode, str(soft_limit)],
                                   stdout=subprocess.PIPE, stderr=stderr,
                                   cwd=Path(__file__).parents[3])  # fmt: skip
    assert process.stdout is not None
    port, cap = (int(word) for word in process.stdout.readline().split())
    return process, port, cap


def test_connections_beyond_the_descriptors_are_503_not_a_timeout(tmp_path: Path) -> None:
    process, port, cap = _serve_under(512, "serve", tmp_path / "stderr")
    held: list[socket.socket] = []
    try:
        assert 0 < cap < 512 - ACCEPTING_FDS - SPARE_FDS
        held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(600)]
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            reply = sock.recv(65536)  # answered at once, before any request
        assert reply.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
        assert b'"code":"too_many_connections"' in reply
    finally:
        for sock in held:
            sock.close()
        process.kill()
        process.wait()
    assert (tmp_path / "stderr").read_bytes() == b""


def test_accept_out_of_descriptors_is_one_log_line(tmp_path: Path) -> None:
    process, port, _ = _serve_under(512, "exhaust", tmp_path / "stderr")
    try:
        waiting = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(20)]
        time.sleep(2.5)  # asyncio retries accept() every second
        for sock in waiting:
            sock.close()
    finally:
        process.kill()
        process.wait()
    lines = (tmp_path / "stderr").read_text().splitlines()
    assert lines == [
        "the OpenAI-compatible endpoint could not accept connections: Too many open files "
        "(1 failed accept() calls since the last such line; the open-file limit is 512)"
    ]
