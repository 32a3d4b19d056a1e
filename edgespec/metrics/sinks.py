"""Where metrics go: a run folder (JSON, CSV/Parquet, PNG plots); the terminal's tables are
:mod:`edgespec.metrics.summary`'s. Each file is written whole or not at all
(:func:`~edgespec.output_paths.write_atomically`)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from edgespec.core.types import BatchRecord, RequestRecord, RoundRecord
from edgespec.metrics.types import SystemMetrics
from edgespec.output_paths import write_atomically, write_text_atomically

if TYPE_CHECKING:
    pass

REQUEST_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RequestRecord))
REQUEST_DERIVED: tuple[str, ...] = (
    "ttft_s",
    "service_ttft_s",
    "tpot_s",
    "e2e_s",
    "tokens_per_s",
    "slo_met",
)
ROUND_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RoundRecord))


def request_row(record: RequestRecord) -> dict[str, Any]:
    """One request as a flat row: its fields, then the derived latencies and SLO outcome."""
    row = {name: getattr(record, name) for name in REQUEST_FIELDS}
    for name in REQUEST_DERIVED:
        row[name] = getattr(record, name)
    return row


def write_metrics_json(
    path: Path, metrics: SystemMetrics, first: Mapping[str, Any] | None = None
) -> None:
    """``metrics.to_dict()`` as indented JSON (non-finite floats are already ``null``),
    after the fields ``first`` when given."""
    record = {**(first or {}), **metrics.to_dict()}
    write_text_atomically(path, json.dumps(record, indent=2, allow_nan=False) + "\n")


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Iterable[Any]]) -> None:
    """A CSV file of ``header`` and then ``rows`` (their :func:`cells`), in UTF-8, written
    whole or not at all; streams, so ``rows`` may be a generator."""

    def write(fh: BinaryIO) -> None:
        text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
        writer = csv.writer(text)
        writer.writerow(header)
        for row in rows:
            writer.writerow(cells(row))
        text.detach()  # flushed; the file stays open for write_atomically

    write_atomically(path, write)


def write_requests_csv(path: Path, requests: Iterable[RequestRecord]) -> None:
    """Per-request CSV; floats are written in full (``repr``) precision, ``None`` as empty."""
    rows = (request_row(record).values() for record in requests)
    write_csv(path, (*REQUEST_FIELDS, *REQUEST_DERIVED), rows)


def write_rounds_csv(path: Path, rounds: Iterable[RoundRecord]) -> None:
    """Per-round CSV in RoundRecord field order; streams, so rounds may be a generator."""
    rows = ((getattr(record, name) for name in ROUND_FIELDS) for record in rounds)
    write_csv(path, ROUND_FIELDS, rows)


def write_requests_parquet(path: Path, requests: Sequence[RequestRecord]) -> bool:
    """Per-request Parquet when pyarrow is importable; returns whether it was written."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return False
    columns: dict[str, list[Any]] = {name: [] for name in (*REQUEST_FIELDS, *REQUEST_DERIVED)}
    for record in requests:
        for name, value in request_row(record).items():
            columns[name].append(value)
    types = {f.name: f.type for f in dataclasses.fields(RequestRecord)}
    schema = []
    for name in columns:
        kind = types.get(name, "float" if name != "slo_met" else "bool | None")
        if kind == "str":
            schema.append(pa.field(name, pa.string()))
        elif kind == "int":
            schema.append(pa.field(name, pa.int64()))
        elif "bool" in str(kind):
            schema.append(pa.field(name, pa.bool_()))
        else:
            schema.append(pa.field(name, pa.float64()))
    table = pa.table(columns, schema=pa.schema(schema))
    write_atomically(path, lambda fh: pq.write_table(table, fh))
    return True


def write_run(
    run_dir: Path,
    metrics: SystemMetrics,
    requests: Sequence[RequestRecord],
    batches: Sequence[BatchRecord],
    rounds: Iterable[RoundRecord] | None = None,
    *,
    plots: bool = True,
) -> None:
    """Write a run folder: ``metrics.json``, ``requests.csv`` (+ ``requests.parquet`` when
    pyarrow is importable), ``rounds.csv`` when ``rounds`` is given, and PNG plots
    (``latency_cdf.png``, ``slo_attainment.png``, ``utilization.png``, ``batch_sizes.png``);
    when rounds carry deadlines, WISP Eq. 21's ``attribution.json`` and ``attribution.png``.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_metrics_json(run_dir / "metrics.json", metrics)
    write_requests_csv(run_dir / "requests.csv", requests)
    write_requests_parquet(run_dir / "requests.parquet", requests)
    if rounds is not None:
        rounds = list(rounds)
        write_rounds_csv(run_dir / "rounds.csv", rounds)
    if plots:
        from edgespec.metrics.plots import write_plots

        write_plots(run_dir, metrics, requests, batches)
    if rounds is not None:
        write_attribution(run_dir, rounds, plots=plots)


def write_attribution(run_dir: Path, rounds: Sequence[RoundRecord], *, plots: bool) -> None:
    """When rounds carry deadlines: WISP Eq. 21's ``attribution.json`` (and, with
    ``plots``, ``attribution.png``) in ``run_dir``."""
    if not any(r.deadline_s is not None for r in rounds):
        return
    from edgespec.metrics.attribution import attribute_violations

    attribution = attribute_violations(rounds)
    summary = {
        "window_batches": attribution.window,
        "threshold": attribution.threshold,
        "rounds_with_deadline": attribution.num_rounds_with_deadline,
        "violated": attribution.num_violated,
        "compute_dominant": attribution.num_compute_dominant,
    }
    write_text_atomically(run_dir / "attribution.json", json.dumps(summary, indent=2) + "\n")
    if plots:
        from edgespec.metrics.plots import plot_violation_attribution

        plot_violation_attribution(run_dir / "attribution.png", attribution)


def cells(values: Iterable[Any]) -> list[str]:
    """CSV cells: floats in full (``repr``) precision, ``None`` as empty."""
    out = []
    for v in values:
        if v is None:
            out.append("")
        elif isinstance(v, float):
            out.append(repr(v))
        else:
            out.append(str(v))
    return out
