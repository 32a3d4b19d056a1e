"""Distillation shards written whole or not at all, and resumed
(edgespec.learn.drafts.shard_writing): a save that fails leaves no shard and no temporary
file, and the rerun writes exactly the missing shards; temporary files of runs killed
outright, or of the older version, are never read as shards and are removed."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from edgespec.learn.drafts.samples import load_shards
from edgespec.learn.drafts.shard_writing import write_shards


def _batch(index: int) -> dict[str, list[torch.Tensor]]:
    """Batch ``index``: one sequence of ``index + 1`` output tokens."""
    n = index + 1
    return {
        "prompt_ids": [torch.tensor([2, 5], dtype=torch.int32)],
        "output_ids": [torch.arange(n, dtype=torch.int32) + 3],
        "topk_ids": [torch.zeros(n, 2, dtype=torch.int32)],
        "topk_logits": [torch.zeros(n, 2, dtype=torch.float16)],
    }


def _recorded(made: list[int]) -> Callable[[int], dict[str, list[torch.Tensor]]]:
    def make(index: int) -> dict[str, list[torch.Tensor]]:
        made.append(index)
        return _batch(index)

    return make


def _names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


def test_a_save_cut_off_leaves_no_shard_and_the_rerun_writes_only_the_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save = torch.save

    def cut_off(obj: Any, f: Any) -> None:  # Ctrl-C while batch 1 is half written
        if len(obj["output_ids"][0]) == 2:
            if isinstance(f, (str, Path)):  # the older version saved to a path
                Path(f).write_bytes(b"half a shard")
            else:
                f.write(b"half a shard")
            raise KeyboardInterrupt
        save(obj, f)

    with monkeypatch.context() as patch:
        patch.setattr(torch, "save", cut_off)
        with pytest.raises(KeyboardInterrupt):
            write_shards(tmp_path, 3, _batch)
    assert _names(tmp_path) == ["shard_00000.pt"]
    made: list[int] = []
    assert write_shards(tmp_path, 3, _recorded(made)) == 3
    assert made == [1, 2]
    assert [len(s.output_ids) for s in load_shards(tmp_path)] == [1, 2, 3]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd")
def test_a_disk_that_fills_names_the_shard_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.disk_full import disk_full_writing

    write_shards(tmp_path, 3, _batch)
    (tmp_path / "shard_00001.pt").unlink()
    with monkeypatch.context() as patch:
        disk_full_writing(patch, "shard_00001.pt")
        with pytest.raises(OSError, match="No space left on device") as caught:
            write_shards(tmp_path, 3, _batch)
    assert caught.value.filename == str(tmp_path / "shard_00001.pt")
    assert _names(tmp_path) == ["shard_00000.pt", "shard_00002.pt"]
    made: list[int] = []
    assert write_shards(tmp_path, 3, _recorded(made)) == 3
    assert made == [1]


def test_temporary_files_of_gone_writers_are_removed_never_read(tmp_path: Path) -> None:
    write_shards(tmp_path, 1, _batch)
    gone = subprocess.Popen(["true"])
    gone.wait()
    live = os.getppid()  # another process's shard in the making stays
    leftovers = {
        "shard_00000.tmp": b"older version, its shard done",
        "shard_00001.tmp": b"older version, cut off",
        f".shard_00002.pt.{gone.pid}.tmp": b"a run killed outright",
        ".shard_00002.pt.99999999999999999999.tmp": b"no process id at all",
        f".shard_00002.pt.{live}.tmp": b"in the making",
        "notes.tmp": b"no shard's",
    }
    for name, data in leftovers.items():
        (tmp_path / name).write_bytes(data)
    made: list[int] = []
    assert write_shards(tmp_path, 3, _recorded(made)) == 3
    assert made == [1, 2]
    assert _names(tmp_path) == [
        f".shard_00002.pt.{live}.tmp",
        "notes.tmp",
        "shard_00000.pt",
        "shard_00001.pt",
        "shard_00002.pt",
    ]
    assert [len(s.output_ids) for s in load_shards(tmp_path)] == [1, 2, 3]


class _FakeClock:
    """A clock that moves only when a batch is made: each takes ``batch_s``."""

    def __init__(self, batch_s: float) -> None:
        self.now_s, self.batch_s = 0.0, batch_s

    def __call__(self) -> float:
        return self.now_s

    def made(self, index: int) -> dict[str, list[torch.Tensor]]:
        self.now_s += self.batch_s
        return _batch(index)


def test_the_deadline_stops_after_the_batch_that_crosses_it_by_the_clock_given(
    tmp_path: Path,
) -> None:
    """Batches of 1.5 s against a deadline at 2.5 s: batch 0 ends at 1.5, batch 1 (started
    before the deadline) at 3.0, past it: no batch 2. Each batch's seconds as ``clock``
    counts them, exactly (they were ``time.monotonic()``'s, whatever was passed)."""
    clock = _FakeClock(batch_s=1.5)
    seen: list[tuple[int, int, float]] = []
    done = write_shards(tmp_path, 4, clock.made, lambda *p: seen.append(p), 2.5, clock)
    assert done == 2
    assert seen == [(1, 4, 1.5), (2, 4, 1.5)]
    assert _names(tmp_path) == ["shard_00000.pt", "shard_00001.pt"]
    # resumed at 3.0 s: the shards present count, and a deadline at the clock's time is
    # not crossed yet (one more batch), one just before it is
    assert write_shards(tmp_path, 4, clock.made, deadline_s=2.9, clock=clock) == 2
    assert write_shards(tmp_path, 4, clock.made, deadline_s=3.0, clock=clock) == 3
