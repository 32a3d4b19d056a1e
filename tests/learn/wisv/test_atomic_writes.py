"""``edgespec train wisv-data``'s capture settings (``run.json``, checked when a capture
resumes) are written whole or not at all: a disk that fills while they are written leaves
no ``run.json`` and no temporary file, so the next run starts the capture afresh."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.learn.run_settings import RUN_FILE
from edgespec.learn.wisv.shards import ShardStore
from tests.disk_full import NEEDS_PROC_FD, disk_full_writing

pytestmark = NEEDS_PROC_FD


def test_settings_that_fail_midway_leave_no_run_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ShardStore(tmp_path / "parts")
    disk_full_writing(monkeypatch, RUN_FILE)
    with pytest.raises(OSError, match="No space left on device") as caught:
        store.open({"dataset": "gsm8k", "seed": 0})
    assert caught.value.filename == str(tmp_path / "parts" / RUN_FILE)
    assert list((tmp_path / "parts").iterdir()) == []
    monkeypatch.undo()
    store.open({"dataset": "gsm8k", "seed": 0})  # the disk has room again
    assert json.loads((tmp_path / "parts" / RUN_FILE).read_text()) == {
        "dataset": "gsm8k",
        "seed": 0,
    }
