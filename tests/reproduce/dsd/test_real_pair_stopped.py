"""A stopped ``edgespec reproduce dsd-real-pair`` (an error, Ctrl-C, SIGTERM) before its
``--out`` is written stops its server and leaves no result: the server's log beside ``--out``
stays, to say what happened, on a tiny pair."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.reproduce.dsd import real_pair
from edgespec.runtime.loadgen import server_process
from tests.reproduce.tiny_model import save_tiny_model

pytest.importorskip("torch")
pytest.importorskip("grpc")


@pytest.mark.timeout(180)
def test_a_run_stopped_in_its_first_cell_stops_the_server_and_leaves_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(save_tiny_model(tmp_path / "tiny"))
    servers: list[Any] = []

    class Recorded(server_process.ServerProcess):
        def start(self, timeout_s: float = 180.0) -> float:
            servers.append(self)
            return super().start(timeout_s)

    def interrupt(*args: object, **kwargs: object) -> object:
        assert "ready" in real_pair.server_log_path(out).read_text()  # it served
        raise KeyboardInterrupt

    monkeypatch.setattr(server_process, "ServerProcess", Recorded)
    monkeypatch.setattr(real_pair, "run_cell", interrupt)
    out = tmp_path / "new" / "cells.json"
    args = ["--target", model, "--draft", model, "--limit", "1", "--max-new-tokens", "6",
            "--rtt-ms", "0", "--windows", "static", "--out", str(out)]  # fmt: skip
    assert main(["reproduce", "dsd-real-pair", *args]) == 130
    assert capsys.readouterr().err.endswith("edgespec reproduce dsd-real-pair: interrupted\n")
    assert len(servers) == 1 and servers[0]._proc.poll() is not None  # stopped
    assert sorted(p.name for p in out.parent.iterdir()) == ["cells-server.log"]  # no cells.json
