"""``edgespec bench``'s stand-in acceptance trace is written whole or not at all: a disk
that fills while it is written leaves the old file exactly as it was and no temporary
file beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.sim.commands.bench import synthetic_acceptance_trace
from tests.disk_full import NEEDS_PROC_FD, disk_full_writing

pytestmark = NEEDS_PROC_FD


def test_a_synthetic_trace_that_fails_midway_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "synthetic.jsonl"
    path.write_text('{"request_id": "old"}\n')
    disk_full_writing(monkeypatch, "synthetic.jsonl")
    with pytest.raises(OSError, match="No space left on device") as caught:
        synthetic_acceptance_trace(path, 0, num_requests=3)
    assert caught.value.filename == str(path)
    assert [p.name for p in tmp_path.iterdir()] == ["synthetic.jsonl"]
    assert path.read_text() == '{"request_id": "old"}\n'
