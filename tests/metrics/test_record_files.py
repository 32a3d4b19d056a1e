"""Records streamed to a run folder (metrics/record_files.py): the files hold every record,
in row groups of the given size, and the metrics equal summarize() over kept records."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from edgespec.core.types import BatchRecord, RoundRecord
from edgespec.metrics.record_files import RecordFiles, read_plot_columns, read_rounds
from edgespec.metrics.sinks import REQUEST_DERIVED, REQUEST_FIELDS, cells, request_row
from edgespec.metrics.summary import summarize
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate
from tests.sim.helpers import tiny_scenario


def test_streamed_files_hold_every_record_in_row_groups(tmp_path: Path) -> None:
    scenario = scenario_from_dict(tiny_scenario(), ["record_rounds=true"])
    kept = simulate(scenario)
    with RecordFiles(tmp_path, rounds=True, row_group_rows=7) as files:
        streamed = simulate(scenario, sink=files)
    assert streamed.requests == () and streamed.batches == ()
    metrics = files.finish(streamed.duration_s, streamed.num_servers)
    expected = summarize(kept.requests, kept.batches, kept.duration_s, kept.num_servers,
                         rounds=kept.rounds,
                         unfinished=kept.unfinished)  # fmt: skip
    assert metrics == expected and kept.num_unfinished_requests > 0
    assert metrics.num_committed_tokens == sum(r.num_committed for r in kept.rounds)

    requests = pq.ParquetFile(tmp_path / "requests.parquet")
    assert requests.metadata.num_rows == len(kept.requests) > 7
    assert requests.metadata.num_row_groups == -(-len(kept.requests) // 7)
    assert (
        max(
            requests.metadata.row_group(i).num_rows for i in range(requests.metadata.num_row_groups)
        )
        == 7
    )
    rows = requests.read().to_pylist()
    assert rows == [request_row(r) for r in kept.requests]
    with (tmp_path / "requests.csv").open() as f:
        lines = list(csv.reader(f))
    assert lines[0] == [*REQUEST_FIELDS, *REQUEST_DERIVED]
    assert lines[1:] == [cells(request_row(r).values()) for r in kept.requests]

    batches = pq.read_table(tmp_path / "batches.parquet").to_pylist()
    assert [tuple(b.values()) for b in batches] == [
        (b.server_id, b.start_s, b.end_s, b.batch_size, b.num_new_tokens, b.num_cached_tokens)
        for b in kept.batches
    ]
    assert read_rounds(tmp_path) == list(kept.rounds)
    assert all(isinstance(r, RoundRecord) for r in kept.rounds)

    columns, (server_ids, starts, ends) = read_plot_columns(tmp_path)
    assert columns["ttft_s"].tolist() == [r.ttft_s for r in kept.requests]
    assert columns["slo_class"].tolist() == [r.slo_class for r in kept.requests]
    assert server_ids.tolist() == [b.server_id for b in kept.batches]
    assert starts.tolist() == [b.start_s for b in kept.batches]
    assert ends.tolist() == [b.end_s for b in kept.batches]


def test_row_group_size_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="row_group_rows must be >= 1, got 0"):
        RecordFiles(tmp_path, row_group_rows=0)


def test_few_kept_batch_spans_give_the_same_busy_times() -> None:
    """The simulator's accumulators keep SIM_BUSY_KEEP spans per server, not 1,024."""
    from edgespec.metrics.accumulator import SIM_BUSY_KEEP, MetricsAccumulator

    kept = simulate(scenario_from_dict(tiny_scenario()))
    few, many = MetricsAccumulator(SIM_BUSY_KEEP), MetricsAccumulator()
    for batch in kept.batches:
        few.add_batch(batch)
        many.add_batch(batch)
    assert len(kept.batches) > 20 * SIM_BUSY_KEEP
    assert few.finish(kept.duration_s, 2) == many.finish(kept.duration_s, 2)
    with pytest.raises(ValueError, match="busy_keep must be >= 1, got 0"):
        MetricsAccumulator(0)


def test_a_full_last_row_group_leaves_no_empty_one(tmp_path: Path) -> None:
    with RecordFiles(tmp_path, row_group_rows=2) as files:
        files.batch(BatchRecord(0, 0.0, 1.0, 1, 4, 0))
        files.batch(BatchRecord(0, 1.0, 2.0, 2, 8, 4))
    metadata = pq.ParquetFile(tmp_path / "batches.parquet").metadata
    assert (metadata.num_rows, metadata.num_row_groups) == (2, 1)
    assert pq.ParquetFile(tmp_path / "requests.parquet").metadata.num_row_groups == 0


def test_rounds_are_dropped_without_rounds_files(tmp_path: Path) -> None:
    with RecordFiles(tmp_path) as files:
        files.round(RoundRecord("r", 0, 0.0, 1.0, 0.1, 0.1, 0.1, 0.5, 0.1, 4, 2, 3, 1))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "batches.parquet",
        "requests.csv",
        "requests.parquet",
    ]


def test_a_run_that_raises_leaves_no_records_nor_the_folder_it_made(tmp_path: Path) -> None:
    run_dir = tmp_path / "new" / "run"
    with pytest.raises(RuntimeError, match="midway"), RecordFiles(run_dir, rounds=True) as files:
        files.batch(BatchRecord(0, 0.0, 1.0, 1, 4, 0))
        raise RuntimeError("midway")
    assert not run_dir.exists() and (tmp_path / "new").exists()  # only the folder it made


def test_a_run_that_raises_keeps_the_folder_and_what_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "rounds.csv").write_text("an earlier run's, not this one's")
    with pytest.raises(KeyboardInterrupt), RecordFiles(tmp_path) as files:
        files.batch(BatchRecord(0, 0.0, 1.0, 1, 4, 0))
        raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "rounds.csv"]
