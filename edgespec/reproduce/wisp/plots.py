"""Plots of the WISP reproduction: Fig. 7's violation curves and Table 2's capacities."""

from __future__ import annotations

from pathlib import Path

from edgespec.metrics.plots import pyplot, save_figure
from edgespec.reproduce.wisp.runs import WispResults
from edgespec.reproduce.wisp.setup import CLASSES
from edgespec.sweeps.capacity import class_violation

COLOURS = {"c2": "tab:green", "c4": "tab:blue", "c6": "tab:orange", "c8": "tab:red"}


def plot_violation_curves(path: Path, res: WispResults) -> None:
    """Fig. 7: violation rate vs devices per class, WISP solid, FCFS dashed, WISP without
    its predictor dotted, WISP work-conserving dash-dotted."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 4.0), constrained_layout=True)
    for system, style in (("wisp", "-"), ("fcfs", "--"), ("wisp-np", ":"), ("wisp-wc", "-.")):
        points = sorted(n for s, n in res.curves if s == system)
        for cls, target in CLASSES.items():
            rates = [100 * class_violation(cls)(res.curves[(system, n)]) for n in points]
            label = f"{system.upper()} {target:g} tok/s"
            ax.plot(points, rates, style, color=COLOURS[cls], marker=".", label=label)
    ax.set_xlabel("devices (mixed classes)")
    ax.set_ylabel("SLO violation rate (%)")
    ax.set_title(
        "violation vs load: WISP (solid), FCFS (dashed), no predictor (dotted), "
        "work-conserving (dash-dot)",
        fontsize=8,
    )
    ax.legend(fontsize=6, ncol=3)
    ax.grid(alpha=0.3)
    save_figure(plt, fig, path)


def plot_capacities(path: Path, res: WispResults) -> None:
    """Table 2: capacity per class for each system and target, as grouped bars."""
    plt = pyplot()
    targets = res.plan.targets
    fig, axes = plt.subplots(
        1, len(targets), figsize=(5.0 * len(targets), 3.8), constrained_layout=True, squeeze=False
    )
    systems = ("wisp", "centralized", "sled")
    for ax, target in zip(axes[0], targets, strict=True):
        classes = list(res.plan.classes)
        width = 0.8 / len(systems)
        for k, system in enumerate(systems):
            values = [res.capacities[(system, target, c)] or 0 for c in classes]
            xs = [i + (k - 1) * width for i in range(len(classes))]
            ax.bar(xs, values, width, label=system)
        ax.set_xticks(range(len(classes)), [f"{CLASSES[c]:g} tok/s" for c in classes])
        ax.set_ylabel("capacity (devices)")
        ax.set_title(target, fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    save_figure(plt, fig, path)
