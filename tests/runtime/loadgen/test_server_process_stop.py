"""``ServerProcess.stop`` (the bench's own server, ``reproduce wisp-serving``'s and
``dsd-real-pair``'s servers) stops a server cleanly at once when the process that started
it ignores SIGINT (a script's background job, a pytest-xdist worker): it sent SIGINT, which
the server inherits ignored and keeps ignored, so each stop waited its 10 s and killed it."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from edgespec.runtime.loadgen.server_process import ServerProcess, free_port


def test_a_server_started_ignoring_sigint_stops_cleanly_at_once(tmp_path: Path) -> None:
    from edgespec.runtime.testing import synthetic_target

    synthetic_target(2, 64).save_pretrained(tmp_path / "target")
    log = tmp_path / "server.log"
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child inherits it
    try:
        args = ["--target", str(tmp_path / "target"), "--threads", "1"]
        server = ServerProcess(args, free_port(), log)
        server.start()
    finally:
        signal.signal(signal.SIGINT, previous)
    started = time.monotonic()
    server.stop()
    took_s = time.monotonic() - started
    assert log.read_text().splitlines()[-1] == "edgespec serve: terminated"
    assert took_s < 5.0


def test_a_paused_server_stops_cleanly_at_once(tmp_path: Path) -> None:
    """Stopped while a restart fault has it paused (SIGSTOP: Ctrl-C at that moment): the
    SIGTERM waited until the 10 s kill; it is resumed to act on it now."""
    from edgespec.runtime.testing import synthetic_target

    synthetic_target(2, 64).save_pretrained(tmp_path / "target")
    log = tmp_path / "server.log"
    server = ServerProcess(["--target", str(tmp_path / "target"), "--threads", "1"],
                           free_port(), log)  # fmt: skip
    server.start()
    server.pause()
    started = time.monotonic()
    server.stop()
    took_s = time.monotonic() - started
    assert log.read_text().splitlines()[-1] == "edgespec serve: terminated"
    assert took_s < 5.0
