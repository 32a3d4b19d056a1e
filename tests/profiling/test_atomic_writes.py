"""``edgespec profile``'s files are written whole or not at all: a disk that fills while
the shipped samples are written, or while a resumed checkpoint drops its cut-off last line,
leaves the old file exactly as it was and no temporary file beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.profiling.checkpoint import FORMAT, VERSION, CheckpointWriter
from edgespec.profiling.samples import write_document
from tests.disk_full import NEEDS_PROC_FD, disk_full_writing

pytestmark = NEEDS_PROC_FD


def test_samples_that_fail_midway_leave_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "samples.json"
    out.write_text('{"samples": []}\n')
    disk_full_writing(monkeypatch, "samples.json")
    doc = {"target": "tiny", "samples": [{"config": 0, "time_s": 1.0}]}
    with pytest.raises(OSError, match="No space left on device") as caught:
        write_document(doc, out)
    assert caught.value.filename == str(out)
    assert [p.name for p in tmp_path.iterdir()] == ["samples.json"]
    assert out.read_text() == '{"samples": []}\n'


def test_a_checkpoint_whose_repair_fails_keeps_every_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p-samples.jsonl"
    header = json.dumps({"format": FORMAT, "version": VERSION, "setup": {"target": "tiny"}})
    measured = json.dumps({"config": 0, "num_prompts": 2, "samples": []})
    old = f"{header}\n{measured}\n" + '{"config": 1, "num_pro'  # killed mid-write
    path.write_text(old)
    disk_full_writing(monkeypatch, "p-samples.jsonl")
    with pytest.raises(OSError, match="No space left on device"):
        CheckpointWriter(path, {"target": "tiny"}, append=True)
    assert [p.name for p in tmp_path.iterdir()] == ["p-samples.jsonl"]
    assert path.read_text() == old
    monkeypatch.undo()
    with CheckpointWriter(path, {"target": "tiny"}, append=True):  # the disk has room again
        pass
    assert path.read_text() == f"{header}\n{measured}\n"
