"""Where metrics go: a run folder (JSON, CSV/Parquet, PNG plots) and a terminal table."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgespec.core.types import BatchRecord, RequestRecord, RoundRecord
from edgespec.metrics.types import LatencyStats, SystemMetrics

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

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


def write_metrics_json(path: Path, metrics: SystemMetrics) -> None:
    """``metrics.to_dict()`` as indented JSON (non-finite floats are already ``null``)."""
    path.write_text(json.dumps(metrics.to_dict(), indent=2, allow_nan=False) + "\n")


def write_requests_csv(path: Path, requests: Iterable[RequestRecord]) -> None:
    """Per-request CSV; floats are written in full (``repr``) precision, ``None`` as empty."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow((*REQUEST_FIELDS, *REQUEST_DERIVED))
        for record in requests:
            writer.writerow(cells(request_row(record).values()))


def write_rounds_csv(path: Path, rounds: Iterable[RoundRecord]) -> None:
    """Per-round CSV in RoundRecord field order; streams, so rounds may be a generator."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(ROUND_FIELDS)
        for record in rounds:
            writer.writerow(cells(getattr(record, name) for name in ROUND_FIELDS))


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
    pq.write_table(pa.table(columns, schema=pa.schema(schema)), path)
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
    (run_dir / "attribution.json").write_text(json.dumps(summary, indent=2) + "\n")
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


def _ms(stats: LatencyStats | None, name: str) -> str:
    if stats is None:
        return "-"
    return f"{getattr(stats, name) * 1000:.1f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, fmt: str = ".3g") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return format(value, fmt)


def print_summary(metrics: SystemMetrics, console: Console | None = None) -> None:
    """Print a compact rich summary: latency percentiles, then throughput, SLO, speculation
    and server rows."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    m = metrics
    lat = Table(title="latency (ms)", title_justify="left", box=None, pad_edge=False)
    lat.add_column("")
    for col in ("mean", "p50", "p90", "p99"):
        lat.add_column(col, justify="right")
    rows = [("TTFT", m.ttft), ("TPOT", m.tpot), ("E2E", m.e2e)]
    if m.service_ttft != m.ttft:  # some requests waited for their device
        rows.insert(1, ("TTFT from start", m.service_ttft))
    for label, stats in rows:
        lat.add_row(label, *(_ms(stats, f) for f in ("mean_s", "p50_s", "p90_s", "p99_s")))

    tab = Table(title="system", title_justify="left", box=None, pad_edge=False, show_header=False)
    tab.add_column("metric")
    tab.add_column("value")
    tab.add_row("requests", f"{m.num_requests} in {_num(m.duration_s, '.4g')} s")
    tab.add_row("throughput", f"{_num(m.throughput_requests_per_s)} req/s")
    tab.add_row("goodput", f"{_num(m.goodput_tokens_per_s, '.4g')} tok/s")
    tab.add_row("server tokens", f"{_num(m.throughput_tokens_per_s, '.4g')} tok/s")
    tab.add_row("SLO attainment", _pct(m.slo_attainment))
    for c in m.slo_classes_by_target():
        if c.attainment is not None:
            target = "" if c.target_tokens_per_s is None else f" ≥{c.target_tokens_per_s:g} tok/s"
            tab.add_row(
                f"  {c.slo_class}{target}",
                f"{_pct(c.attainment)} ({c.num_met}/{c.num_with_target})",
            )
    tab.add_row("acceptance rate", _pct(m.acceptance_rate))
    tab.add_row("AAL / rounds per req", f"{_num(m.aal)} / {_num(m.rounds_per_request)}")
    tab.add_row("wasted draft tokens", f"{m.num_wasted_draft_tokens}")
    util = f"{_pct(m.mean_server_utilization)} mean over {m.num_servers}"
    tab.add_row("server utilization", util)
    tab.add_row("batch size", f"{_num(m.mean_batch_size)} mean, {m.num_batches} batches")
    if m.time_split is not None:
        t = m.time_split
        tab.add_row(
            "time draft/net/queue/verify",
            "/".join(
                _pct(x) for x in (t.draft_share, t.network_share, t.queue_share, t.verify_share)
            ),
        )
    console.print(lat)
    console.print(tab)


def print_runs(
    rows: Sequence[tuple[Mapping[str, Any], SystemMetrics]],
    console: Console | None = None,
    title: str = "",
) -> None:
    """One table row per run (a sweep point or a capacity probe): its settings, then
    goodput, p50 TPOT, acceptance, SLO violation rate and mean server utilization; then,
    when some run has SLO classes with a target, a second table of each class's attainment
    per run (Fig. 7's per-class curves)."""
    from rich.console import Console

    console = console or Console()
    keys = list(rows[0][0]) if rows else []
    names = ["goodput tok/s", "TPOT p50 ms", "acceptance", "SLO violation", "server util"]
    console.print(
        _runs_table(
            rows,
            keys,
            names,
            lambda m: [
                "-" if m.goodput_tokens_per_s is None else f"{m.goodput_tokens_per_s:.0f}",
                "-" if m.tpot is None else f"{m.tpot.p50_s * 1000:.1f}",
                _pct(m.acceptance_rate),
                _pct(m.slo_violation_rate),
                _pct(m.mean_server_utilization),
            ],
            title,
        )
    )
    classes = sorted(
        {c.slo_class for _, m in rows for c in m.slo_classes if c.target_tokens_per_s is not None}
    )
    if classes:

        def attained(m: SystemMetrics) -> list[str]:
            by_class = {c.slo_class: c.attainment for c in m.slo_classes}
            return [_pct(by_class.get(c)) for c in classes]

        console.print(_runs_table(rows, keys, classes, attained, "SLO attainment per class"))


def _runs_table(
    rows: Sequence[tuple[Mapping[str, Any], SystemMetrics]],
    keys: list[str],
    names: Sequence[str],
    cells: Callable[[SystemMetrics], list[str]],
    title: str,
) -> Table:
    """A table with the runs' settings (``keys``, shortened) and ``names`` columns."""
    from rich.table import Table

    table = Table(title=title or None, min_width=len(title) + 4)  # the title on one line
    for key in keys:
        table.add_column(".".join(key.split(".")[-2:]))  # full keys are in the files
    for name in names:
        table.add_column(name, justify="right")
    for settings, m in rows:
        table.add_row(*(str(settings.get(k)) for k in keys), *cells(m))
    return table
