"""PNG plots of a run (matplotlib, Agg backend): latency CDFs, SLO attainment, utilization
over time, batch sizes, violation attribution. Imported lazily so that ``edgespec --help``
stays fast."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.core.types import BatchRecord, RequestRecord
from edgespec.metrics.attribution import ViolationAttribution
from edgespec.metrics.formatting import percent
from edgespec.metrics.types import SystemMetrics
from edgespec.output_paths import write_atomically

FloatArray = npt.NDArray[np.float64]
MAX_CLASS_LINES = 6
MAX_SERVER_LINES = 8


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(plt: Any, fig: Any, path: Path) -> None:
    """Save ``fig`` to ``path`` whole or not at all (the format is the path's suffix's),
    then close it."""
    try:
        write_atomically(path, lambda fh: fig.savefig(fh, format=path.suffix[1:] or None, dpi=110))
    finally:
        plt.close(fig)


BatchColumns = tuple[npt.NDArray[np.int64], FloatArray, FloatArray]
"""Batches as columns: (server_id, start_s, end_s)."""


def batch_columns(batches: Sequence[BatchRecord]) -> BatchColumns:
    """:data:`BatchColumns` of ``batches``."""
    return (
        np.fromiter((b.server_id for b in batches), np.int64, len(batches)),
        np.fromiter((b.start_s for b in batches), np.float64, len(batches)),
        np.fromiter((b.end_s for b in batches), np.float64, len(batches)),
    )


def utilization_over_time(
    batches: Sequence[BatchRecord] | BatchColumns,
    num_servers: int,
    duration_s: float,
    num_bins: int = 100,
) -> tuple[FloatArray, FloatArray]:
    """Busy fraction of each server in ``num_bins`` equal bins of [0, duration_s].

    ``batches``: records, or their :data:`BatchColumns` (a run streamed to Parquet).
    Returns (bin edges, array num_servers × num_bins). Uses the cumulative busy time
    B(t) = Σ_{start<t} (t − start) − Σ_{end<t} (t − end) per server, evaluated at the
    edges with sorted prefix sums: O(batches · log batches), no per-bin loop.
    """
    servers, starts, ends = batches if isinstance(batches, tuple) else batch_columns(batches)
    edges = np.linspace(0.0, duration_s, num_bins + 1)
    width = duration_s / num_bins
    util = np.zeros((num_servers, num_bins))
    order = np.argsort(servers, kind="stable")
    servers, starts, ends = servers[order], starts[order], ends[order]
    ids, first = np.unique(servers, return_index=True)
    bounds = [*first.tolist(), len(servers)]
    for i, server in enumerate(ids.tolist()):
        if not 0 <= server < num_servers:
            raise ValueError(f"batch on server {server} but num_servers={num_servers}")
        lo, hi = bounds[i], bounds[i + 1]
        cum = _cumulative(np.sort(starts[lo:hi]), edges) - _cumulative(np.sort(ends[lo:hi]), edges)
        util[server] = np.diff(cum) / width
    return edges, util


def _cumulative(points: FloatArray, edges: FloatArray) -> FloatArray:
    """Σ_{p < t} (t − p) for each t in ``edges``; ``points`` sorted."""
    prefix = np.concatenate(([0.0], np.cumsum(points)))
    count = np.searchsorted(points, edges, side="left")
    return np.asarray(count * edges - prefix[count], dtype=np.float64)


LATENCY_COLUMNS = ("slo_class", "ttft_s", "tpot_s", "e2e_s", "num_output_tokens")
"""The request columns the latency CDFs read (the output count: a one-token request has no
TPOT, left out of its panel as the TPOT statistics leave it out)."""


def request_columns(requests: Sequence[RequestRecord]) -> dict[str, Any]:
    """The :data:`LATENCY_COLUMNS` of ``requests`` (class names; float arrays)."""
    columns: dict[str, Any] = {"slo_class": np.array([r.slo_class for r in requests], dtype=object)}
    for name in LATENCY_COLUMNS[1:]:
        columns[name] = np.fromiter((getattr(r, name) for r in requests), np.float64, len(requests))
    return columns


def panel_rows(columns: Mapping[str, Any], attr: str) -> Any:
    """Which requests a latency panel plots: all of them, but for TPOT those of two or more
    output tokens (a one-token request has none: its 0 put the TPOT CDF's median at 0 where
    metrics.json's p50, which leaves it out, was 100 ms)."""
    outputs = np.asarray(columns["num_output_tokens"], dtype=np.float64)
    return outputs > 1 if attr == "tpot_s" else np.ones(len(outputs), dtype=bool)


def plot_latency_cdfs(path: Path, requests: Sequence[RequestRecord] | Mapping[str, Any]) -> None:
    """Empirical CDFs of TTFT, TPOT (ms) and E2E (s), overall and per SLO class;
    ``requests``: records or their :func:`request_columns`."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), constrained_layout=True)
    columns = requests if isinstance(requests, Mapping) else request_columns(requests)
    slo_class = np.asarray(columns["slo_class"], dtype=object)
    count = len(slo_class)
    classes = sorted(set(slo_class.tolist()))
    groups: list[tuple[str, Any]] = [("all", np.ones(count, dtype=bool))]
    if 1 < len(classes) <= MAX_CLASS_LINES:
        groups += [(c, slo_class == c) for c in classes]
    panels = (
        ("TTFT (ms)", "ttft_s", 1e3),
        ("TPOT (ms)", "tpot_s", 1e3),
        ("E2E latency (s)", "e2e_s", 1.0),
    )
    for ax, (label, attr, scale) in zip(axes, panels, strict=True):
        counted = panel_rows(columns, attr)
        everything = np.asarray(columns[attr], dtype=np.float64)[counted] * scale
        for name, chosen in groups:
            if not chosen[counted].any():
                continue
            values = np.sort(everything[chosen[counted]])
            ys = np.arange(1, len(values) + 1) / len(values)
            style = {"color": "black", "lw": 2.0} if name == "all" else {"lw": 1.2, "alpha": 0.8}
            ax.step(values, ys, where="post", label=name, **style)
        xlabel = label
        if everything.size:
            p99, top = float(np.percentile(everything, 99)), float(everything.max())
            if top > 1.5 * p99 > 0:
                # A long tail squeezes the body of the CDF: cut the axis, say so.
                ax.set_xlim(left=0, right=1.5 * p99)
                xlabel = f"{label}; axis cut at 1.5×p99, max {top:.4g}"
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of requests")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        if not count:
            ax.text(0.5, 0.5, "no completed requests", ha="center", transform=ax.transAxes)
    if len(groups) > 1:
        axes[0].legend(title="SLO class", fontsize=8)
    fig.suptitle(f"Latency CDFs ({count} requests)")
    save_figure(plt, fig, path)


def plot_slo_attainment(path: Path, metrics: SystemMetrics) -> None:
    """Bar per SLO class: share of its requests that met the class's token-speed target."""
    plt = pyplot()
    stats = [s for s in metrics.slo_classes_by_target() if s.attainment is not None]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.2 * len(stats) + 2), 3.8), constrained_layout=True)
    if stats:
        labels = [
            f"{s.slo_class}\n≥{s.target_tokens_per_s:g} tok/s"
            if s.target_tokens_per_s is not None
            else s.slo_class
            for s in stats
        ]
        values = [100 * (s.attainment or 0.0) for s in stats]
        bars = ax.bar(labels, values, color="tab:blue")
        for bar, s in zip(bars, stats, strict=True):
            ax.annotate(
                f"{percent(s.attainment or 0.0)}\n({s.num_met}/{s.num_with_target})",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=8,
            )
    else:
        ax.text(0.5, 0.5, "no request has an SLO target", ha="center", transform=ax.transAxes)
    ax.set_ylim(0, 115)
    ax.set_ylabel("SLO attainment (%)")
    overall = metrics.slo_attainment
    title = "SLO attainment per class"
    ax.set_title(title if overall is None else f"{title} (overall {percent(overall)})")
    ax.grid(axis="y", alpha=0.3)
    save_figure(plt, fig, path)


def plot_utilization(
    path: Path,
    metrics: SystemMetrics,
    batches: Sequence[BatchRecord] | BatchColumns,
    num_bins: int = 100,
) -> None:
    """Server busy fraction over time: mean and min–max band, per-server lines when few."""
    plt = pyplot()
    edges, util = utilization_over_time(batches, metrics.num_servers, metrics.duration_s, num_bins)
    mids = (edges[:-1] + edges[1:]) / 2
    fig, ax = plt.subplots(figsize=(9, 3.8), constrained_layout=True)
    pct = 100 * util
    if metrics.num_servers <= MAX_SERVER_LINES:
        for s in range(metrics.num_servers):
            ax.plot(mids, pct[s], lw=1.0, alpha=0.7, label=f"server {s}")
    else:
        ax.fill_between(mids, pct.min(axis=0), pct.max(axis=0), alpha=0.25, label="min–max")
    ax.plot(mids, pct.mean(axis=0), color="black", lw=2.0, label="mean")
    ax.set_xlim(0, metrics.duration_s)
    ax.set_ylim(0, 105)
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("busy (%)")
    ax.set_title(
        f"Server utilization over time ({metrics.num_servers} servers, "
        f"bin {metrics.duration_s / num_bins:.3g} s, "
        f"mean {percent(metrics.mean_server_utilization)})"
    )
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(alpha=0.3)
    save_figure(plt, fig, path)


def plot_batch_sizes(path: Path, metrics: SystemMetrics) -> None:
    """Histogram of verification batch sizes (number of batches per size)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.8), constrained_layout=True)
    if metrics.batch_sizes:
        sizes = [b.batch_size for b in metrics.batch_sizes]
        counts = [b.num_batches for b in metrics.batch_sizes]
        ax.bar(sizes, counts, width=0.8, color="tab:green")
        if len(sizes) <= 16:
            ax.set_xticks(sizes)
        else:
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        ax.text(0.5, 0.5, "no batches", ha="center", transform=ax.transAxes)
    ax.set_xlabel("batch size (entries)")
    ax.set_ylabel("batches")
    mean = metrics.mean_batch_size
    ax.set_title(
        f"Batch sizes ({metrics.num_batches} batches"
        + (f", mean {mean:.2f})" if mean is not None else ")")
    )
    ax.grid(axis="y", alpha=0.3)
    save_figure(plt, fig, path)


def write_plots(
    run_dir: Path,
    metrics: SystemMetrics,
    requests: Sequence[RequestRecord] | Mapping[str, Any],
    batches: Sequence[BatchRecord] | BatchColumns,
) -> None:
    """All four PNGs into ``run_dir`` (from records, or from their columns)."""
    plot_latency_cdfs(run_dir / "latency_cdf.png", requests)
    plot_slo_attainment(run_dir / "slo_attainment.png", metrics)
    plot_utilization(run_dir / "utilization.png", metrics, batches)
    plot_batch_sizes(run_dir / "batch_sizes.png", metrics)


def plot_violation_attribution(path: Path, attribution: ViolationAttribution) -> None:
    """WISP Fig. 8: (t_queue, t_verify) of every violated round, compute-dominant (ρ above
    the threshold) and queue-dominant rounds in two colours."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 4.0), constrained_layout=True)
    for compute, colour, label in ((True, "tab:red", "compute"), (False, "tab:blue", "queue")):
        points = [v for v in attribution.violated if v.compute_dominant is compute]
        ax.scatter(
            [1000 * v.queue_s for v in points],
            [1000 * v.verify_s for v in points],
            s=8,
            alpha=0.6,
            color=colour,
            label=f"{label}-dominant ({len(points)})",
        )
    ax.set_xlabel("t_queue (ms)")
    ax.set_ylabel("t_verify (ms)")
    share = attribution.compute_share
    title = f"violated rounds: {attribution.num_violated} of {attribution.num_rounds_with_deadline}"
    if share is not None:
        title += f", {percent(share)} with ρ > {attribution.threshold:g}"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    save_figure(plt, fig, path)
