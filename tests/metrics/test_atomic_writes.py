"""A run folder's files are written whole or not at all: a write that fails midway (a full
disk) leaves no file under the output's name and no temporary file, whatever the writer —
CSV, Parquet, PNG — and records streamed during a run keep temporary names until it ends."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgespec.core.types import BatchRecord, RequestRecord
from edgespec.metrics import summarize
from edgespec.metrics.record_files import RecordFiles
from edgespec.metrics.sinks import write_requests_csv, write_requests_parquet
from tests.metrics.test_summary import BATCHES, REQUESTS


def half_then_full(target: Any) -> None:
    """Write half a file to ``target`` (a path or an open file), then fail as a full disk."""
    if isinstance(target, str | os.PathLike):
        with open(target, "wb") as fh:
            fh.write(b"half a fi")
    else:
        target.write(b"half a fi")
    raise OSError(28, "No space left on device")


def test_a_plot_that_fails_midway_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.figure import Figure

    from edgespec.metrics.plots import plot_batch_sizes

    monkeypatch.setattr(Figure, "savefig", lambda self, target, **kw: half_then_full(target))
    with pytest.raises(OSError, match="No space left"):
        plot_batch_sizes(tmp_path / "batch_sizes.png", summarize(REQUESTS, BATCHES, 10.0, 2))
    assert list(tmp_path.iterdir()) == []


def test_a_parquet_file_that_fails_midway_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    monkeypatch.setattr(pq, "write_table", lambda table, target, **kw: half_then_full(target))
    with pytest.raises(OSError, match="No space left"):
        write_requests_parquet(tmp_path / "requests.parquet", REQUESTS)
    assert list(tmp_path.iterdir()) == []


def test_a_csv_file_that_fails_midway_leaves_the_old_one(tmp_path: Path) -> None:
    def cut_off() -> Iterator[RequestRecord]:
        yield REQUESTS[0]
        raise KeyboardInterrupt

    (tmp_path / "requests.csv").write_text("old\n")
    with pytest.raises(KeyboardInterrupt):
        write_requests_csv(tmp_path / "requests.csv", cut_off())
    assert [p.name for p in tmp_path.iterdir()] == ["requests.csv"]
    assert (tmp_path / "requests.csv").read_text() == "old\n"


def test_streamed_records_keep_temporary_names_until_the_run_ends(tmp_path: Path) -> None:
    files = RecordFiles(tmp_path)
    files.batch(BatchRecord(0, 0.0, 1.0, 1, 4, 0))
    files.close()  # the files as a run killed here leaves them: none under a record's name
    pid = os.getpid()
    names = ["requests.csv", "requests.parquet", "batches.parquet"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f".{n}.{pid}.tmp" for n in names)
    files.__exit__(None, None, None)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
