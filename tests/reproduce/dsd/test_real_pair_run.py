"""``edgespec reproduce dsd-real-pair`` end to end on a tiny pair (the target drafts for
itself: every draft token is accepted): its server on a free port with its output beside
``--out``, one row per (RTT, window) cell, every output target-only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.reproduce.dsd.real_pair import server_log_path
from tests.reproduce.tiny_model import save_tiny_model

pytest.importorskip("torch")
pytest.importorskip("grpc")


@pytest.mark.timeout(180)
def test_a_run_writes_its_cells_and_the_servers_output(tmp_path: Path) -> None:
    model = str(save_tiny_model(tmp_path / "tiny"))
    out = tmp_path / "new" / "cells.json"  # its folder is made
    args = ["--target", model, "--draft", model, "--limit", "1", "--max-new-tokens", "6",
            "--rtt-ms", "0,5", "--windows", "static", "--out", str(out)]  # fmt: skip
    assert main(["reproduce", "dsd-real-pair", *args]) == 0
    rows = json.loads(out.read_text())
    assert [(r["rtt_ms"], r["window"], r["lossless"]) for r in rows] == [
        (0.0, "static", True),
        (5.0, "static", True),
    ]
    assert "ready" in server_log_path(out).read_text()
