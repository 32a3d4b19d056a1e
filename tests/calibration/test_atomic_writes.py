"""``edgespec calibrate``'s trace is written whole or not at all: a disk that fills while
``trace.jsonl`` is written leaves the old file exactly as it was and no temporary file."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.calibration.runs import RealRun, write_trace
from tests.disk_full import NEEDS_PROC_FD, disk_full_writing
from tests.metrics.test_summary import REQUESTS

pytestmark = NEEDS_PROC_FD


def test_a_trace_that_fails_midway_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text('{"request_id": "old"}\n')
    real = RealRun((REQUESTS[0],), ((),), (0,), ((),), (0.0, 0.0, 0.0))
    disk_full_writing(monkeypatch, "trace.jsonl")
    with pytest.raises(OSError, match="No space left on device") as caught:
        write_trace(real, path)
    assert caught.value.filename == str(path)
    assert [p.name for p in tmp_path.iterdir()] == ["trace.jsonl"]
    assert path.read_text() == '{"request_id": "old"}\n'
