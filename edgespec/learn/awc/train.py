"""Training the WC-DNN with torch (DSD §4.4): a residual MLP with two blocks and SiLU
(5 → width → 2 residual blocks → 1), L1 loss, AdamW, 100 epochs, on an ``awc-data``
directory split by scenario; exported to numpy as a
:class:`~edgespec.policies.awc.WcDnn` that gives the torch network's outputs.

Held-out report: MAE of the raw predicted γ, and accuracy of the decision the policy
would take from one prediction (clamped to [1, 12] and rounded half up; 1 = fused).
Missing features (NaN: TPOT before two tokens) are imputed with the training mean, as
the policy does.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import shlex
import sys
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from edgespec.learn.progress import EpochDone, epoch_progress
from edgespec.learn.settings_checks import (
    MAX_WIDTH,
    check_at_least_one,
    check_at_most,
    check_non_negative,
    check_positive,
)
from edgespec.models.seeding import torch_seeded
from edgespec.policies.awc import AwcSettings, round_gamma
from edgespec.policies.stop_drafting import DenseLayer
from edgespec.policies.wc_dnn import AWC_FEATURE_NAMES, WcDnn


class ResidualBlock(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.first = nn.Linear(width, width)
        self.second = nn.Linear(width, width)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = h + self.second(nn.functional.silu(self.first(h)))
        return out


class WcDnnNet(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.input = nn.Linear(len(AWC_FEATURE_NAMES), width)
        self.blocks = nn.ModuleList([ResidualBlock(width), ResidualBlock(width)])
        self.output = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.silu(self.input(x))
        for block in self.blocks:
            h = block(h)
        out: torch.Tensor = self.output(nn.functional.silu(h))[:, 0]
        return out


@dataclass(frozen=True, slots=True)
class AwcTrainSettings:
    width: int = 64
    epochs: int = 100
    learning_rate: float = 1e-3
    weight_decay: float = 1e-2
    batch_size: int = 256
    seed: int = 0

    def __post_init__(self) -> None:
        check_at_least_one(width=self.width, epochs=self.epochs, batch_size=self.batch_size)
        check_at_most("width", self.width, MAX_WIDTH)
        check_positive("learning_rate", self.learning_rate)
        check_non_negative("weight_decay", self.weight_decay)


@dataclass(frozen=True, slots=True, eq=False)
class AwcDataset:
    features: npt.NDArray[np.float64]
    labels: npt.NDArray[np.float64]
    scenario_ids: npt.NDArray[np.int64]


def join_labels(contexts: dict[str, list[Any]], labels: dict[int, int]) -> AwcDataset:
    """Contexts of the labelled scenarios, each with its scenario's label."""
    ids = np.asarray(contexts["scenario_id"], dtype=np.int64)
    keep = np.array([int(i) in labels for i in ids], dtype=bool)
    features = np.column_stack(
        [np.asarray(contexts[n], dtype=np.float64) for n in AWC_FEATURE_NAMES]
    )[keep]
    target = np.array([labels[int(i)] for i in ids[keep]], dtype=np.float64)
    return AwcDataset(features, target, ids[keep])


def split_by_scenario(data: AwcDataset, holdout: float, seed: int) -> tuple[AwcDataset, AwcDataset]:
    """Whole scenarios to one side: ``holdout`` of them (at least one) held out."""
    scenarios = np.unique(data.scenario_ids)
    rng = np.random.default_rng(seed)
    count = max(1, round(holdout * len(scenarios)))
    held = set(rng.choice(scenarios, min(count, len(scenarios) - 1), replace=False).tolist())
    mask = np.array([int(i) in held for i in data.scenario_ids], dtype=bool)

    def part(m: npt.NDArray[np.bool_]) -> AwcDataset:
        return AwcDataset(data.features[m], data.labels[m], data.scenario_ids[m])

    return part(~mask), part(mask)


def standardiser(features: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], ...]:
    mean = np.nanmean(features, axis=0)
    scale = np.nanstd(features, axis=0)
    return np.nan_to_num(mean), np.where(scale > 1e-12, scale, 1.0)


def _inputs(features: npt.NDArray[np.float64], mean: Any, scale: Any) -> torch.Tensor:
    return torch.tensor(np.nan_to_num((features - mean) / scale, nan=0.0), dtype=torch.float32)


def train_wc_dnn(
    train: AwcDataset, settings: AwcTrainSettings, on_epoch: EpochDone | None = None
) -> tuple[WcDnnNet, WcDnn]:
    """L1 regression of the label γ with AdamW; returns the network and its export (seeded
    with ``settings.seed``; the caller's torch generators untouched); ``on_epoch`` hears
    each epoch's mean loss."""
    with torch_seeded(settings.seed):
        mean, scale = standardiser(train.features)
        x, y = _inputs(train.features, mean, scale), torch.tensor(train.labels, dtype=torch.float32)
        net = WcDnnNet(settings.width)
        optimiser = torch.optim.AdamW(
            net.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
        )
        generator = torch.Generator().manual_seed(settings.seed)
        loss_fn = nn.L1Loss()
        net.train()
        for epoch in range(1, settings.epochs + 1):
            order, total = torch.randperm(len(x), generator=generator), 0.0
            for i in range(0, len(x), settings.batch_size):
                batch = order[i : i + settings.batch_size]
                optimiser.zero_grad()
                loss = loss_fn(net(x[batch]), y[batch])
                loss.backward()  # type: ignore[no-untyped-call]
                optimiser.step()
                total += float(loss.detach()) * len(batch)
            if on_epoch is not None:
                on_epoch(epoch, total / len(x))
        net.eval()
        return net, export_wc_dnn(net, mean, scale)


def export_wc_dnn(net: WcDnnNet, mean: Any, scale: Any) -> WcDnn:
    """The numpy :class:`WcDnn` of ``net``; ``ValueError`` naming the layer when a weight
    is not finite (a diverged training)."""

    def dense(layer: nn.Linear, name: str) -> DenseLayer:
        weight = layer.weight.detach().double().numpy().T.copy()
        try:
            return DenseLayer(weight, layer.bias.detach().double().numpy().copy())
        except ValueError as exc:
            raise ValueError(f"{name}.{exc}") from exc

    blocks = tuple(
        (dense(b.first, f"blocks[{i}][0]"), dense(b.second, f"blocks[{i}][1]"))  # type: ignore[arg-type]
        for i, b in enumerate(net.blocks)
    )
    return WcDnn(
        np.asarray(mean, np.float64), np.asarray(scale, np.float64),
        dense(net.input, "input"), blocks, dense(net.output, "output"),
    )  # fmt: skip


def torch_predict(net: WcDnnNet, model: WcDnn, features: npt.NDArray[np.float64]) -> Any:
    """The torch network's raw γ (float64, eval mode), for checking the export."""
    x = torch.tensor(np.nan_to_num((features - model.mean) / model.scale), dtype=torch.float64)
    with torch.no_grad():
        out = net.double()(x).numpy()
    net.float()
    return np.asarray(out, dtype=np.float64)


class AwcReport(TypedDict):
    """:func:`evaluate`'s report of one side (train or held out)."""

    rows: int
    scenarios: int
    mae_gamma: float
    accuracy: float
    mode_accuracy: float
    fused_share: float
    fused_recall: float | None
    """``None`` (JSON ``null``) when the side has no fused label."""


def evaluate(model: WcDnn, data: AwcDataset) -> AwcReport:
    """MAE of the raw γ, accuracy of the rounded, clamped decision (1 = fused), the
    accuracy of its mode alone (fused or distributed: DSD's two-way choice), fused recall
    (``None`` when ``data`` has no fused label: JSON ``null``) and the share of fused
    labels."""
    raw = model.predict(data.features)
    settings = AwcSettings()
    chosen = np.array([round_gamma(min(12.0, max(1.0, r)), settings) for r in raw])
    return AwcReport(
        rows=len(data.labels),
        scenarios=len(np.unique(data.scenario_ids)),
        mae_gamma=float(np.mean(np.abs(raw - data.labels))),
        accuracy=float(np.mean(chosen == data.labels)),
        mode_accuracy=float(np.mean((chosen == 1) == (data.labels == 1))),
        fused_share=float(np.mean(data.labels == 1)),
        fused_recall=float(np.mean(chosen[data.labels == 1] == 1))
        if np.any(data.labels == 1)
        else None,
    )


def run_training(args: argparse.Namespace) -> int:
    from edgespec.learn.awc.inputs import (
        check_data_folder,
        check_two_labelled,
        label_weights,
        read_contexts,
        read_labels,
    )
    from edgespec.learn.finished import check_file_replaceable
    from edgespec.output_paths import write_text_atomically

    check_file_replaceable("--out", args.out, "the WC-DNN's weights", args.overwrite)
    torch.set_num_threads(args.threads)
    check_data_folder(args.data)
    labels = read_labels(args.data / "labels.parquet")
    weights = label_weights(args.data / "labels.json")
    data = join_labels(read_contexts(args.data / "contexts"), labels)
    check_two_labelled(args.data, data.scenario_ids, labels)
    train, held = split_by_scenario(data, args.holdout, args.seed)
    settings = AwcTrainSettings(args.width, args.epochs, args.lr, args.weight_decay,
                                args.batch_size, args.seed)  # fmt: skip
    model, report = _train_finite(train, held, settings)
    meta = {
        "command": "edgespec " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "trained": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "settings": {k: getattr(settings, k) for k in settings.__dataclass_fields__},
        "report": report,
        "label_weights": weights,
        "label_counts": {
            str(int(g)): int(n)
            for g, n in zip(*np.unique(list(labels.values()), return_counts=True), strict=True)
        },
    }
    model = WcDnn(model.mean, model.scale, model.input, model.blocks, model.output, meta)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(model.to_json(), separators=(",", ":"), allow_nan=False)  # strict JSON
    write_text_atomically(args.out, text + "\n")
    print(json.dumps(report, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _train_finite(
    train: AwcDataset, held: AwcDataset, settings: AwcTrainSettings
) -> tuple[WcDnn, dict[str, AwcReport]]:
    """The trained model and its report, refused (nothing is written) when the training
    diverged: a weight, or the MAE (the L1 loss) on either side, not a finite number."""
    from rich.console import Console

    from edgespec.errors import UserInputError

    advice = "nothing written (try a lower --lr)"
    try:
        with epoch_progress(Console(stderr=True, markup=False), settings.epochs) as on_epoch:
            _, model = train_wc_dnn(train, settings, on_epoch)
    except ValueError as exc:  # the export (DenseLayer) refuses a non-finite weight
        raise UserInputError(f"training diverged: {exc}; {advice}") from exc
    report = {"train": evaluate(model, train), "held_out": evaluate(model, held)}
    for side, found in report.items():
        if not math.isfinite(found["mae_gamma"]):
            raise UserInputError(
                f"training diverged: the {side} MAE (the L1 loss) is {found['mae_gamma']}; {advice}"
            )
    return model, report
