"""Slow (EDGESPEC_SLOW=1): the impatient drafter as it was found, in processes. An
``edgespec serve`` on a synthetic target and an ``edgespec draft`` whose 20 ms request
timeout is far shorter than one verification of its 3,000-token prompt: the drafter sends
each call again until its pass ends, the prompt prefilled once (it reopened the session and
prefilled it again, five times, then gave up), and the server holds no session of it."""

from __future__ import annotations

import subprocess
import sys
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


def test_an_impatient_drafter_finishes_on_one_prefill_and_leaves_no_session(
    server: ServerProcess,
) -> None:
    prompt = ",".join(str(i % 4000 + 1) for i in range(3000))
    argv = [sys.executable, "-m", "edgespec.cli", "draft", "--server", server.address,
            "--draft", "ngram", "--prompt-ids", prompt, "--request-timeout-s", "0.02",
            "--max-new-tokens", "32"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.split("]")) > 2  # token ids committed
    assert "sending the same block again on the same session" in done.stderr
    assert "Traceback" not in done.stderr
    probe = RemoteVerifier(server.address, timeout_s=10.0)
    try:
        stats = probe.stats()
    finally:
        probe.close_channel()
    assert (stats.num_sessions, stats.num_cache_misses) == (0, 1)
