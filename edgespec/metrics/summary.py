"""``summarize``: SystemMetrics from completed runs' record lists (docs/METRICS.md), and
the terminal's view of them: ``print_summary`` (one run) and ``print_runs`` (a sweep's
points, a capacity search's probes).

Pure aggregation over the shared record types of ``edgespec.core.types``; the simulator
and the real runtime both feed it. For long runs use ``MetricsAccumulator`` online:
the two give identical results.

Every figure printed is a plain number and no header is cut short
(:mod:`edgespec.metrics.formatting`, whose :func:`plain`, :func:`fixed`, :func:`setting`
and :func:`fit_headers` this module also exports).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from edgespec.core.types import BatchRecord, RequestRecord, RoundRecord
from edgespec.core.unfinished import UnfinishedCount
from edgespec.metrics.accumulator import MetricsAccumulator
from edgespec.metrics.formatting import fit_headers, fixed, percent, plain, setting
from edgespec.metrics.types import LatencyStats, SloClassStats, SystemMetrics

if TYPE_CHECKING:
    from rich.console import Console, JustifyMethod
    from rich.table import Table

__all__ = [
    "SystemMetrics",
    "fit_headers",
    "fixed",
    "plain",
    "print_runs",
    "print_summary",
    "setting",
    "summarize",
]


def summarize(
    requests: Iterable[RequestRecord],
    batches: Iterable[BatchRecord],
    duration_s: float,
    num_servers: int,
    rounds: Iterable[RoundRecord] | None = None,
    unfinished: UnfinishedCount | None = None,
) -> SystemMetrics:
    """Metrics of a run of ``duration_s`` seconds on ``num_servers`` target servers.

    ``requests`` are the completed requests, ``batches`` every verification forward pass,
    ``rounds`` (optional) every round verified inside the run: with them the metrics hold
    the committed goodput too; ``unfinished`` (optional), the requests that had not
    finished at its end (:attr:`~edgespec.sim.simulator.SimResult.unfinished`). Raises
    ``ValueError`` naming the record when one is inconsistent.
    """
    acc = MetricsAccumulator()
    for request in requests:
        acc.add_request(request)
    for batch in batches:
        acc.add_batch(batch)
    for record in rounds if rounds is not None else ():
        acc.add_round(record)
    if unfinished is not None:
        acc.add_unfinished(unfinished)
    return acc.finish(duration_s, num_servers)


# --- the terminal's view


def _ms(stats: LatencyStats | None, name: str) -> str:
    return "-" if stats is None else fixed(getattr(stats, name) * 1000, 1)


def _requests(m: SystemMetrics) -> str:
    """The requests that finished in the run, and those that had not at its end (if any
    and counted)."""
    finished = f"{plain(m.num_requests)} in {plain(m.duration_s, 4)} s"
    if not m.num_unfinished_requests:
        return finished
    return f"{finished}, {plain(m.num_unfinished_requests)} unfinished at the end"


def _attainment_of_arrivals(m: SystemMetrics) -> str:
    """The SLO attainment over every request that arrived, between its bounds, and how many
    unfinished requests already missed their targets."""
    bounds = f"{percent(m.slo_attainment_at_least)} to {percent(m.slo_attainment_at_most)}"
    unfinished = f"{plain(m.num_unfinished_with_target)} unfinished"
    return f"{bounds} ({unfinished}, {plain(m.num_unfinished_missed)} missed)"


def _class_attainment(c: SloClassStats) -> str:
    """A class's attainment of its finished requests (``-`` where none finished) and, where
    some of its requests were unfinished, its bounds over every arrival (the run's row's,
    class by class)."""
    finished = f"{percent(c.attainment)} ({plain(c.num_met)}/{plain(c.num_with_target)})"
    if not c.num_unfinished_with_target:
        return finished
    return f"{finished}, {percent(c.attainment_at_least)} to {percent(c.attainment_at_most)}"


def print_summary(metrics: SystemMetrics, console: Console | None = None) -> None:
    """Print a compact rich summary: latency percentiles, then throughput, SLO, speculation
    and server rows."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(markup=False)
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
    tab.add_row("requests", _requests(m))
    tab.add_row("throughput", f"{plain(m.throughput_requests_per_s)} req/s")
    tab.add_row("goodput", f"{plain(m.goodput_tokens_per_s, 4)} tok/s")
    if m.committed_goodput_tokens_per_s is not None:
        tab.add_row("committed goodput", f"{plain(m.committed_goodput_tokens_per_s, 4)} tok/s")
    tab.add_row("server tokens", f"{plain(m.throughput_tokens_per_s, 4)} tok/s")
    tab.add_row("SLO attainment", percent(m.slo_attainment))
    if m.num_unfinished_with_target:
        tab.add_row("  of every arrival", _attainment_of_arrivals(m))
    for c in m.slo_classes_by_target():
        if c.attainment is not None or c.attainment_at_least is not None:
            target = c.target_tokens_per_s
            shown = "" if target is None else f" ≥{plain(target)} tok/s"
            tab.add_row(f"  {c.slo_class}{shown}", _class_attainment(c))
    tab.add_row("acceptance rate", percent(m.acceptance_rate))
    tab.add_row("AAL / rounds per req", f"{plain(m.aal)} / {plain(m.rounds_per_request)}")
    tab.add_row("wasted draft tokens", plain(m.num_wasted_draft_tokens))
    util = f"{percent(m.mean_server_utilization)} mean over {plain(m.num_servers)}"
    tab.add_row("server utilization", util)
    batches = f"{plain(m.mean_batch_size)} mean, {plain(m.num_batches)} batches"
    tab.add_row("batch size", batches)
    if m.time_split is not None:
        t = m.time_split
        tab.add_row(
            "time draft/net/queue/verify",
            "/".join(
                percent(x) for x in (t.draft_share, t.network_share, t.queue_share, t.verify_share)
            ),
        )
    console.print(lat)
    console.print(tab)


def classes_by_target(metrics: Iterable[SystemMetrics]) -> list[str]:
    """The SLO classes with a target and a finished request in any of ``metrics``, by target
    token speed (loosest first, as :meth:`SystemMetrics.slo_classes_by_target`), then by
    name."""
    targets: dict[str, float] = {}
    for m in metrics:
        for c in m.slo_classes:
            if c.target_tokens_per_s is not None and c.num_with_target:
                targets.setdefault(c.slo_class, c.target_tokens_per_s)
    return sorted(targets, key=lambda name: (targets[name], name))


def print_runs(
    rows: Sequence[tuple[Mapping[str, Any], SystemMetrics]],
    console: Console | None = None,
    title: str = "",
) -> None:
    """One table row per run (a sweep point or a capacity probe): its settings, then
    goodput, p50 TPOT, acceptance, SLO violation rate and mean server utilization, under it
    the range of the requests unfinished at the runs' ends (which no column counts); then,
    when some run has SLO classes with a target, a second table of each class's attainment
    per run (Fig. 7's per-class curves), the classes by target token speed. The settings'
    headers are their full keys."""
    from rich.console import Console

    console = console or Console(markup=False)
    keys = list(rows[0][0]) if rows else []
    names = ["goodput tok/s", "TPOT p50 ms", "acceptance", "SLO violation", "server util"]
    console.print(
        _runs_table(
            rows,
            keys,
            names,
            lambda m: [
                plain(None if m.goodput_tokens_per_s is None else round(m.goodput_tokens_per_s)),
                "-" if m.tpot is None else fixed(m.tpot.p50_s * 1000, 1),
                percent(m.acceptance_rate),
                percent(m.slo_violation_rate),
                percent(m.mean_server_utilization),
            ],
            title,
            console.width,
            _unfinished_range(m for _, m in rows),
        )
    )
    classes = classes_by_target(m for _, m in rows)
    if classes:

        def attained(m: SystemMetrics) -> list[str]:
            by_class = {c.slo_class: c.attainment for c in m.slo_classes}
            return [percent(by_class.get(c)) for c in classes]

        title = "SLO attainment per class"
        console.print(_runs_table(rows, keys, classes, attained, title, console.width))


def _unfinished_range(runs: Iterable[SystemMetrics]) -> str | None:
    """The least and most requests unfinished at a run's end over ``runs`` (those that
    counted them), and of them already sure to miss their target where any was, as a line;
    ``None`` when none counted them."""
    counted = [m for m in runs if m.num_unfinished_requests is not None]
    if not counted:
        return None
    line = f"unfinished at the end: {_range([m.num_unfinished_requests for m in counted])}"
    missed = [m.num_unfinished_missed for m in counted]
    sure = f" ({_range(missed)} of them sure to miss)" if any(missed) else ""
    return f"{line} requests a run{sure}"


def _range(values: Sequence[int | None]) -> str:
    least, most = min(v or 0 for v in values), max(v or 0 for v in values)
    return plain(least) if least == most else f"{plain(least)} to {plain(most)}"


def _runs_table(
    rows: Sequence[tuple[Mapping[str, Any], SystemMetrics]],
    keys: list[str],
    names: Sequence[str],
    cells: Callable[[SystemMetrics], list[str]],
    title: str,
    width: int,
    caption: str | None = None,
) -> Table:
    """A table with the runs' settings (``keys``) and ``names`` columns, its headers
    wrapped to fit ``width`` columns (:func:`fit_headers`), none cut short; ``caption``
    under it."""
    from rich.table import Table
    from rich.text import Text

    body = [[*(setting(settings.get(k)) for k in keys), *cells(m)] for settings, m in rows]
    headers = fit_headers([*keys, *names], body, width - (3 * (len(keys) + len(names)) + 1))
    table = Table(title=title or None, caption=caption, min_width=len(title) + 4)  # title: one line
    for i, header in enumerate(headers):
        justify: JustifyMethod = "left" if i < len(keys) else "right"
        table.add_column(Text(header), justify=justify, overflow="fold")  # Text: no markup
    for row in body:
        table.add_row(*(Text(cell) for cell in row))
    return table
