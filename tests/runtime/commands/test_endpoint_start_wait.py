"""``edgespec draft --serve-openai`` started before its verification server (systemd may
start it first) waits for the server up to ``--retry-timeout-s``, a line every 5 s, then
loads and serves; past that it exits 1 with the unreachable server's line. It exited 1 at
once. ``edgespec draft --prompt`` still fails at once against one ``--server``."""

from __future__ import annotations

import re
import time
from pathlib import Path

from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.commands.draft_connect import START_PROGRESS_S
from tests.runtime.commands.processes import Command
from tests.runtime.conftest import start_server
from tests.runtime.openai_api.conftest import free_port

HINT = "(is an `edgespec serve` running and reachable at the --server address?)"
SERVING = r"OpenAI-compatible endpoint on http://127\.0\.0\.1:(\d+)/v1"


def _waiting(address: str, wait_s: str) -> str:
    """The pattern of the line the endpoint says while no server answers."""
    said = re.escape(f"edgespec draft: no verification server answers yet ({address}): waited ")
    return f"^{said}\\d+{re.escape(f' s of --retry-timeout-s ({wait_s} s)')}$"


def test_the_endpoint_waits_for_a_server_that_starts_after_it(
    target: TransformersTarget, model_dir: Path, tmp_path: Path
) -> None:
    port = free_port()
    address = f"127.0.0.1:{port}"
    args = ["draft", "--server", address, "--draft", str(model_dir),
            "--serve-openai", "127.0.0.1:0", "--retry-timeout-s", "60"]  # fmt: skip
    command = Command(args, tmp_path / "stderr")
    server = None
    try:
        command.wait_for(_waiting(address, "60"))  # was: exit 1 at once
        server = start_server(target, target=str(model_dir), host="127.0.0.1", port=port)
        command.wait_for(SERVING)
    finally:
        command.kill()
        if server is not None:
            server.stop(grace_s=0)


def test_the_endpoint_exits_1_once_the_wait_is_out(model_dir: Path, tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    wait_s = START_PROGRESS_S + 1.0
    args = ["draft", "--server", address, "--draft", str(model_dir),
            "--serve-openai", "127.0.0.1:0", "--retry-timeout-s", f"{wait_s:g}"]  # fmt: skip
    command = Command(args, tmp_path / "stderr")
    try:
        command.wait_for(r"connecting to ")
        start = time.monotonic()
        assert command.stopped(timeout_s=60) == 1
        took_s = time.monotonic() - start
    finally:
        command.kill()
    lines = command.lines
    assert [line for line in lines if re.match(_waiting(address, f"{wait_s:g}"), line)] == [
        lines[-2]
    ]
    assert lines[-1].startswith("edgespec draft: UNAVAILABLE: failed to connect to all addresses")
    assert lines[-1].endswith(HINT)
    assert wait_s - 0.5 < took_s < wait_s + 5.0  # was at once
