"""Plots of the DSD reproduction: Fig. 5 stacks, Fig. 6 crossover, Figs. 7–10 sweeps."""

from __future__ import annotations

from pathlib import Path

from edgespec.metrics.plots import pyplot, save_figure
from edgespec.reproduce.dsd.runs import (
    CROSSOVER_MODES,
    DsdResults,
    batching_name,
    crossover_name,
    routing_name,
    stack_name,
)
from edgespec.reproduce.dsd.setup import STACKS
from edgespec.reproduce.dsd.summary import DsdRunSummary


def _tpot(summary: DsdRunSummary | None) -> float:
    return float("nan") if summary is None or summary.tpot_ms is None else summary.tpot_ms


def _thr(summary: DsdRunSummary | None) -> float:
    return float("nan") if summary is None else summary.throughput_requests_per_s


def plot_stacks(path: Path, res: DsdResults) -> None:
    """Fig. 5: throughput and TPOT per policy stack."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.0, 3.4), constrained_layout=True)
    names = list(STACKS)
    runs = [res.get(stack_name(s)) for s in names]
    left.bar(names, [_thr(r) for r in runs], color="tab:blue")
    left.set_ylabel("throughput (requests/s)")
    right.bar(names, [_tpot(r) for r in runs], color="tab:orange")
    right.set_ylabel("mean TPOT (ms)")
    for ax in (left, right):
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("policy stacks, GSM8K, RTT 10 ms", fontsize=9)
    save_figure(plt, fig, path)


def plot_crossover(path: Path, res: DsdResults) -> None:
    """Fig. 6: mean TPOT vs RTT: distributed, cloud-only (DSD's fused) and colocated."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.6), constrained_layout=True)
    rtts = sorted(res.plan.crossover_rtts_ms)
    for mode, style in zip(CROSSOVER_MODES, ("-", "--", ":"), strict=True):
        ys = [_tpot(res.get(crossover_name(mode, r))) for r in rtts]
        ax.plot(rtts, ys, style, marker=".", label=mode)
    ax.set_xlabel("RTT (ms)")
    ax.set_ylabel("mean TPOT (ms)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    save_figure(plt, fig, path)


def plot_sweep(path: Path, res: DsdResults, kind: str) -> None:
    """Figs. 7–8 (``kind`` routing: JSQ vs round-robin) or 9–10 (batching: FIFO vs LAB):
    throughput and TPOT vs the number of drafts."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.0, 3.4), constrained_layout=True)
    drafts = sorted(res.plan.sweep_drafts)
    variants = ("jsq", "round_robin") if kind == "routing" else ("fcfs", "lab")
    name = routing_name if kind == "routing" else batching_name
    for variant in variants:
        runs = [res.get(name(variant, n)) for n in drafts]
        left.plot(drafts, [_thr(r) for r in runs], marker=".", label=variant)
        right.plot(drafts, [_tpot(r) for r in runs], marker=".", label=variant)
    left.set_ylabel("throughput (requests/s)")
    right.set_ylabel("mean TPOT (ms)")
    for ax in (left, right):
        ax.set_xlabel("drafts")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    save_figure(plt, fig, path)


def plot_dsd(out: Path, res: DsdResults) -> list[str]:
    """Every plot of ``res``'s cost mode, written into ``out`` as ``<mode>-<figure>.png``;
    their file names."""
    mode = res.cost_mode
    names = [f"{mode}-{f}.png" for f in ("fig5_stacks", "fig6_crossover", "fig7_8_routing")]
    names.append(f"{mode}-fig9_10_batching.png")
    plot_stacks(out / names[0], res)
    plot_crossover(out / names[1], res)
    plot_sweep(out / names[2], res, "routing")
    plot_sweep(out / names[3], res, "batching")
    return names
