"""The WISV decision head's metrics on a ``wisv-data`` split: ROC AUC, accuracy, class
balance (:func:`evaluate`) and the acceptance table the simulator reads
(:func:`acceptance_table`: the share of held-out mismatches rejected at T = 0..16 on the
poor and the good link of :data:`~edgespec.learn.wisv.train.CHANNELS`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.learn.wisv.auc import roc_auc
from edgespec.learn.wisv.dataset import WisvDataset
from edgespec.learn.wisv.train import CHANNELS, THRESHOLDS, Instances, Split, inputs
from edgespec.policies.semantic.csi import ChannelState
from edgespec.policies.semantic.head import THRESHOLD_STEPS, DecisionHead, rejected_at
from edgespec.policies.semantic.relabel import rejection_targets


def evaluate(head: DecisionHead, data: Instances) -> dict[str, int | float | None]:
    """Instances and mismatches (counts, as integers: was ``576.0``), class balance, AUC
    against the relabelled hard and the base labels, accuracy at τ = 0.5 against the
    relabelled hard labels, mean p. A metric that is undefined on ``data`` (an AUC where one
    class is missing, a share of no instances) is ``None`` (JSON ``null``: the files are
    strict JSON)."""
    p = head.rejection_probability(data.x.astype(np.float64))

    def mean(values: npt.NDArray[Any]) -> float:
        return float(values.mean()) if values.size else math.nan

    counts = {"instances": len(data), "mismatches": int(np.unique(data.row).size)}
    found = {
        "base_critical_share": mean(data.base),
        "relabelled_reject_share": mean(data.hard),
        "mean_target": mean(data.target),
        "auc_relabelled": roc_auc(p, data.hard),
        "auc_base": roc_auc(p, data.base),
        "accuracy_relabelled": mean((p >= 0.5) == (data.hard == 1)),
        "accuracy_base": mean((p >= 0.5) == (data.base == 1)),
        "mean_p": mean(p),
    }
    shares = {name: value if math.isfinite(value) else None for name, value in found.items()}
    return {**counts, **shares}


def reject_shares(
    head: DecisionHead, data: WisvDataset, rows: npt.NDArray[np.int64], channel: ChannelState
) -> list[float]:
    """Share of ``rows``' mismatches the head rejects on ``channel`` at T = 0..16."""
    x = inputs(data, rows, channel).astype(np.float64)
    p = head.rejection_probability(x)
    return [float(np.mean(rejected_at(p, t))) for t in THRESHOLDS]


def label_reject_share(episodes: Split, channel: ChannelState, budget: str) -> float:
    """The labels' own reject share on ``channel`` under ``budget`` (the mean target)."""
    values = [rejection_targets(e, channel.quality, budget) for _, _, e in episodes]
    return float(np.concatenate(values).mean()) if values else float("nan")


def acceptance_table(
    head: DecisionHead, data: WisvDataset, held: Split, budget: str
) -> dict[str, Any]:
    """The table the simulator reads (module docstring), on the held-out mismatches."""
    rows = np.concatenate([idx for _, idx, _ in held])
    channels = {
        name: {
            "uplink_mbps": c.uplink_bps / 1e6,
            "per": c.per,
            "rtt_ms": c.rtt_s * 1e3,
            "quality": round(c.quality, 4),
        }
        for name, c in CHANNELS.items()
    }
    return {
        "thresholds": list(THRESHOLDS),
        "tau": [t / THRESHOLD_STEPS for t in THRESHOLDS],
        "channels": channels,
        "reject_share": {
            name: [round(v, 4) for v in reject_shares(head, data, rows, c)]
            for name, c in CHANNELS.items()
        },
        "label_reject_share": {
            name: round(label_reject_share(held, c, budget), 4) for name, c in CHANNELS.items()
        },
        "mismatches": int(rows.size),
        "prompts": len(held),
        "base_critical_share": round(float(data.rows["critical"][rows].mean()), 4),
        "relabelled": budget != "keep-critical",
        "budget": budget,
    }
