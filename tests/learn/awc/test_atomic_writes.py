"""``edgespec train awc-data``'s labels are written whole or not at all: a disk that fills
while ``labels.json`` is written leaves the old file exactly as it was and no temporary
file beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.learn.awc.folder import Labelled, write_labels
from edgespec.learn.awc.tables import write_parquet
from tests.disk_full import NEEDS_PROC_FD, disk_full_writing

pytestmark = NEEDS_PROC_FD


def test_labels_that_fail_midway_leave_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs: dict[str, list[Any]] = {
        "scenario_id": [0, 0], "gamma": [1, 4], "ttft_s": [0.2, 0.1], "tpot_s": [0.05, 0.02],
        "throughput_tokens_per_s": [10.0, 30.0], "num_requests": [1, 2],
    }  # fmt: skip
    write_parquet(configs, tmp_path / "configs" / "s0.parquet")
    (tmp_path / "labels.json").write_text('{"weights": {"ttft": 9}}\n')
    weights = {"ttft": 1.0, "tpot": 1.0, "throughput": 1.0}
    assert write_labels(tmp_path, weights) == Labelled({0: 4}, 0)  # room: written whole
    (tmp_path / "labels.json").write_text('{"weights": {"ttft": 9}}\n')
    disk_full_writing(monkeypatch, "labels.json")
    with pytest.raises(OSError, match="No space left on device") as caught:
        write_labels(tmp_path, weights)
    assert caught.value.filename == str(tmp_path / "labels.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "configs",
        "labels.json",
        "labels.parquet",
    ]
    assert (tmp_path / "labels.json").read_text() == '{"weights": {"ttft": 9}}\n'
