"""``bench serve`` stopped (Ctrl-C, SIGTERM) while its own server is still starting stops
that server too: the start ran before the block that stops it, so the child ``edgespec
serve`` was left running (RUNTIME.md says the bench stops its own server). A review found
it; here the server is a stand-in process and the stop comes as it polls Health."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from typing import Any

import pytest

from edgespec.runtime.loadgen import server_process
from edgespec.runtime.loadgen.session import BenchSession
from edgespec.runtime.loadgen.spec import LoadSpec, parse_slo_mix


def test_a_stop_while_the_server_starts_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[subprocess.Popen[bytes]] = []

    def interrupted_start(self: Any, timeout_s: float = 180.0) -> float:
        self._proc = subprocess.Popen(["sleep", "30"])  # as start() spawns the server
        started.append(self._proc)
        raise KeyboardInterrupt  # as the signal comes while it polls Health

    monkeypatch.setattr(server_process.ServerProcess, "start", interrupted_start)
    args = argparse.Namespace(prompts="general", server=None, target="some-model",
                              batching="fcfs", backend="transformers", server_threads=1,
                              session_timeout_s=15.0, profile=None, guard_ms=None,
                              log_dir=None, metrics_url=None, draft="ngram")  # fmt: skip
    load = LoadSpec(2, 1, "closed", None, 1.0, 1.0, parse_slo_mix("a:none:1"), 8, 4, "ngram", 0)
    try:
        with pytest.raises(KeyboardInterrupt):
            BenchSession(args, load, tmp_path, lambda line: None).run()
        (server,) = started
        assert server.poll() is not None  # stopped; it was left running
    finally:
        for process in started:
            process.kill()
            process.wait()
