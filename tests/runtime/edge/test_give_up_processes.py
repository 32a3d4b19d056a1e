"""Slow (EDGESPEC_SLOW=1): the impatient drafter as it was found, in processes. An
``edgespec serve`` on a synthetic target and an ``edgespec draft`` whose 20 ms request
timeout is far shorter than one verification of its 3,000-token prompt: the drafter sends
the call again until its budget of retries is spent, gives up (one line, exit 3), and the
server holds no session of it."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgespec.runtime.loadgen.server_process import ServerProcess, free_port
from edgespec.runtime.wire.grpc_client import RemoteVerifier

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    from edgespec.runtime.testing import synthetic_target

    synthetic_target(4, 256).save_pretrained(tmp_path / "target")
    process = ServerProcess(["--target", str(tmp_path / "target")], free_port(),
                            tmp_path / "server.log")  # fmt: skip
    process.start()
    yield process
    process.stop()


def _sessions(address: str) -> int:
    probe = RemoteVerifier(address, timeout_s=10.0)
    try:
        return probe.stats().num_sessions
    finally:
        probe.close_channel()


def test_an_impatient_drafter_gives_up_and_leaves_no_session(server: ServerProcess) -> None:
    prompt = ",".join(str(i % 4000 + 1) for i in range(3000))
    argv = [sys.executable, "-m", "edgespec.cli", "draft", "--server", server.address,
            "--draft", "ngram", "--prompt-ids", prompt, "--request-timeout-s", "0.02",
            "--max-new-tokens", "32"]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    took_s = time.monotonic() - started
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3, done.stderr
    assert lines[-1].startswith("edgespec draft: gave up after 5 resends without a "
                                "committed token (0 committed; "), lines  # fmt: skip
    assert "Traceback" not in done.stderr
    assert took_s < 60
    deadline = time.monotonic() + 30  # verifications the server had started end first
    while _sessions(server.address) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _sessions(server.address) == 0
