"""A run's records streamed to its folder as they are produced (memory flat in the number
of requests): a :class:`RecordFiles` is the simulator's record sink for ``edgespec sim``.

- ``requests.csv`` (a row per request, as :func:`~edgespec.metrics.sinks.write_requests_csv`
  writes it) and ``requests.parquet``;
- ``batches.parquet`` (every verification forward pass);
- with rounds: ``rounds.csv`` and ``rounds.parquet``.

Every round the simulator emits also counts towards the committed goodput, with or
without the rounds' files.

Parquet files are written in row groups of ``row_group_rows`` rows: only the rows of the
group being filled are held. Every record also goes to a
:class:`~edgespec.metrics.accumulator.MetricsAccumulator`, so :meth:`RecordFiles.finish`
gives the same metrics as :func:`~edgespec.metrics.summary.summarize` over the kept
records. The plots read back only the columns they draw (:func:`read_plot_columns`).
"""

from __future__ import annotations

import csv
import dataclasses
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from edgespec.core.types import BatchRecord, RequestRecord, RoundRecord
from edgespec.metrics.accumulator import SIM_BUSY_KEEP, MetricsAccumulator
from edgespec.metrics.sinks import (
    REQUEST_DERIVED,
    REQUEST_FIELDS,
    ROUND_FIELDS,
    cells,
    request_row,
)
from edgespec.metrics.types import SystemMetrics
from edgespec.output_paths import temporary_path, write_atomically

if TYPE_CHECKING:
    from edgespec.metrics.plots import BatchColumns

ROW_GROUP_ROWS = 16_384

_ARROW = {"int": pa.int64(), "str": pa.string(), "float": pa.float64(), "bool": pa.bool_()}
"""Each record field's Parquet type, by its annotation (``X | None``: X's, nullable); a
field of another type fails here, at import, rather than being written as a float."""


def _schema(cls: type[Any], derived: dict[str, pa.DataType] | None = None) -> pa.Schema:
    fields = []
    for f in dataclasses.fields(cls):
        kind = str(f.type).split(" | ")[0]
        fields.append(pa.field(f.name, _ARROW[kind]))
    for name, kind in (derived or {}).items():
        fields.append(pa.field(name, kind))
    return pa.schema(fields)


REQUEST_SCHEMA = _schema(
    RequestRecord,
    {name: pa.bool_() if name == "slo_met" else pa.float64() for name in REQUEST_DERIVED},
)
BATCH_SCHEMA = _schema(BatchRecord)
ROUND_SCHEMA = _schema(RoundRecord)


class _ParquetStream:
    """Rows appended one at a time, written a row group at a time."""

    __slots__ = ("_columns", "_names", "_rows", "_writer", "group_rows")

    def __init__(self, path: Path, schema: pa.Schema, group_rows: int) -> None:
        self._writer = pq.ParquetWriter(path, schema)
        self._names = schema.names
        self._columns: list[list[Any]] = [[] for _ in self._names]
        self._rows = 0
        self.group_rows = group_rows

    def append(self, values: tuple[Any, ...] | list[Any]) -> None:
        for column, value in zip(self._columns, values, strict=True):
            column.append(value)
        self._rows += 1
        if self._rows == self.group_rows:
            self.flush()

    def flush(self) -> None:
        if self._rows:
            self._writer.write_batch(pa.record_batch(self._columns, schema=self._writer.schema))
            self._columns = [[] for _ in self._names]
            self._rows = 0

    def close(self) -> None:
        self.flush()
        self._writer.close()


class RecordFiles:
    """The record sink of a run folder (see the module docstring); a context manager
    that closes its files, and removes them (and the folder, when it made it and nothing
    else is in it) when the run raises: a run that fails, at set-up (a trace not found) or
    midway, leaves no half-written records behind, nor a folder that looks like a run.
    Each file is written under a temporary name beside it (``.NAME.PID.tmp``), renamed
    when the run ends well: a run killed midway leaves no file under a record's name."""

    def __init__(
        self, run_dir: Path, *, rounds: bool = False, row_group_rows: int = ROW_GROUP_ROWS
    ) -> None:
        if row_group_rows < 1:
            raise ValueError(f"row_group_rows must be >= 1, got {row_group_rows}")
        self.run_dir = Path(run_dir)
        self._made_dir = not self.run_dir.exists()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.acc = MetricsAccumulator(SIM_BUSY_KEEP)
        self._csv_files: list[TextIO] = []
        self._written: dict[str, Path] = {}  # record file → its temporary name
        self._requests_csv = self._csv("requests.csv", (*REQUEST_FIELDS, *REQUEST_DERIVED))
        self._requests = _ParquetStream(
            self._temporary("requests.parquet"), REQUEST_SCHEMA, row_group_rows
        )
        self._batches = _ParquetStream(
            self._temporary("batches.parquet"), BATCH_SCHEMA, row_group_rows
        )
        self._rounds: _ParquetStream | None = None
        self._rounds_csv: Any = None
        if rounds:
            self._rounds_csv = self._csv("rounds.csv", ROUND_FIELDS)
            self._rounds = _ParquetStream(
                self._temporary("rounds.parquet"), ROUND_SCHEMA, row_group_rows
            )
        self._add_request = self.acc.add_request
        self._add_batch = self.acc.add_batch
        self._add_round = self.acc.add_round
        self.committed = self.acc.add_committed  # at its end: what rounds not recorded committed
        self.unfinished = self.acc.add_unfinished  # every run, at its end

    def _temporary(self, name: str) -> Path:
        """Where ``name`` is written until the run ends well."""
        self._written[name] = temporary_path(self.run_dir / name)
        return self._written[name]

    def _csv(self, name: str, header: tuple[str, ...]) -> Any:
        handle = self._temporary(name).open("w", newline="", encoding="utf-8")
        self._csv_files.append(handle)
        writer = csv.writer(handle)
        writer.writerow(header)
        return writer

    def request(self, record: RequestRecord) -> None:
        self._add_request(record)
        values = list(request_row(record).values())
        self._requests_csv.writerow(cells(values))
        self._requests.append(values)

    def batch(self, record: BatchRecord) -> None:
        self._add_batch(record)
        self._batches.append(
            (
                record.server_id,
                record.start_s,
                record.end_s,
                record.batch_size,
                record.num_new_tokens,
                record.num_cached_tokens,
            )
        )

    def round(self, record: RoundRecord) -> None:
        self._add_round(record)
        if self._rounds is None:
            return
        values = [getattr(record, name) for name in ROUND_FIELDS]
        self._rounds_csv.writerow(cells(values))
        self._rounds.append(values)

    def finish(self, duration_s: float, num_servers: int) -> SystemMetrics:
        """The run's metrics (the accumulator's; call after the run)."""
        return self.acc.finish(duration_s, num_servers)

    def close(self) -> None:
        for stream in (self._requests, self._batches, self._rounds):
            if stream is not None:
                stream.close()
        for handle in self._csv_files:
            handle.close()

    def __enter__(self) -> RecordFiles:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.close()
            if kind is None:
                for name, temporary in self._written.items():
                    with temporary.open("rb") as fh:
                        os.fsync(fh.fileno())
                    os.replace(temporary, self.run_dir / name)
                return
        except BaseException:
            self._remove()
            raise
        self._remove()

    def _remove(self) -> None:
        """Remove the record files this sink wrote (renamed or not yet), and the folder if
        it made it and nothing else is in it."""
        for name, temporary in self._written.items():
            temporary.unlink(missing_ok=True)
            (self.run_dir / name).unlink(missing_ok=True)
        if self._made_dir and not any(self.run_dir.iterdir()):
            self.run_dir.rmdir()


RECORD_FILE_NAMES = (
    "requests.csv",
    "requests.parquet",
    "batches.parquet",
    "rounds.csv",
    "rounds.parquet",
)
"""Every file a :class:`RecordFiles` may write (the last two only with rounds)."""


def concatenate_records(run_dir: Path, parts: Sequence[Path]) -> None:
    """Concatenate the record files of the folders ``parts`` (each a :class:`RecordFiles`
    folder, e.g. the shards of one run) into ``run_dir``'s, in ``parts`` order, and remove
    the parts. Streams: row groups and CSV lines pass through, never a whole file."""
    if not parts:
        raise ValueError("no record folders to concatenate")
    for name in RECORD_FILE_NAMES:
        present = [part / name for part in parts if (part / name).exists()]
        if not present:
            continue
        if len(present) != len(parts):
            missing = sorted(str(part) for part in parts if not (part / name).exists())
            raise ValueError(f"{name} is missing from {missing}")
        if name.endswith(".csv"):
            _concatenate_csv(run_dir / name, present)
        else:
            _concatenate_parquet(run_dir / name, present)
    for part in parts:
        shutil.rmtree(part)


def _concatenate_csv(path: Path, present: Sequence[Path]) -> None:
    def write(out: BinaryIO) -> None:
        for k, source in enumerate(present):
            with source.open("rb") as handle:
                header = handle.readline()
                if k == 0:
                    out.write(header)
                shutil.copyfileobj(handle, out)

    write_atomically(path, write)


def _concatenate_parquet(path: Path, present: Sequence[Path]) -> None:
    schema = pq.read_schema(present[0])

    def write(out: BinaryIO) -> None:
        with pq.ParquetWriter(out, schema) as writer:
            for source in present:
                for group in pq.ParquetFile(source).iter_batches(batch_size=ROW_GROUP_ROWS):
                    writer.write_batch(group)

    write_atomically(path, write)


def read_rounds(run_dir: Path) -> list[RoundRecord]:
    """The rounds of a run folder's ``rounds.parquet`` (for the violation attribution)."""
    table = pq.read_table(run_dir / "rounds.parquet")
    return [RoundRecord(**row) for row in table.to_pylist()]


def read_plot_columns(run_dir: Path) -> tuple[dict[str, Any], BatchColumns]:
    """What the plots draw, read back from a run folder's Parquet files: the request
    columns of :func:`~edgespec.metrics.plots.plot_latency_cdfs` and the batch columns
    of :func:`~edgespec.metrics.plots.utilization_over_time`."""
    from edgespec.metrics.plots import LATENCY_COLUMNS  # matplotlib: only when plotting

    requests = pq.read_table(run_dir / "requests.parquet", columns=list(LATENCY_COLUMNS))
    columns: dict[str, Any] = {
        name: requests.column(name).to_numpy(zero_copy_only=False) for name in LATENCY_COLUMNS
    }
    batches = pq.read_table(run_dir / "batches.parquet", columns=["server_id", "start_s", "end_s"])
    return columns, (
        batches.column("server_id").to_numpy(),
        batches.column("start_s").to_numpy(),
        batches.column("end_s").to_numpy(),
    )
