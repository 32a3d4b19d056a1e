"""Training the MLP rejection predictor with torch (WISP App. B): binary cross-entropy, Adam,
mini-batches, dropout and batch-norm as searched hyper-parameters, early stopping on the
validation loss. The trained network is exported as an
:class:`~edgespec.policies.stop_drafting.MlpStopPolicy` (batch-norm folded into the linear
layers, eval mode), which runs in numpy and gives the same probabilities as the torch model.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from edgespec.learn.settings_checks import check_at_least_one, check_dropout, check_positive
from edgespec.learn.stop.data import StopDataset
from edgespec.models.seeding import torch_seeded
from edgespec.policies.stop_drafting import DenseLayer, MlpStopPolicy


@dataclass(frozen=True, slots=True)
class MlpSettings:
    """One point of Table 9's MLP search space; a bad field (a hidden size, the batch size,
    epochs or patience < 1, a learning rate not a finite number > 0, dropout outside
    [0, 1)) is a ``ValueError`` naming it and its value."""

    hidden: tuple[int, ...] = (64, 32, 16)
    learning_rate: float = 1e-3
    batch_size: int = 128
    dropout: float = 0.1
    batch_norm: bool = True
    max_epochs: int = 60
    patience: int = 6
    seed: int = 0

    def __post_init__(self) -> None:
        check_at_least_one(**{f"hidden[{i}]": size for i, size in enumerate(self.hidden)})
        check_positive("learning_rate", self.learning_rate)
        check_at_least_one(
            batch_size=self.batch_size, max_epochs=self.max_epochs, patience=self.patience
        )
        check_dropout(self.dropout)


MLP_SEARCH_SPACE: dict[str, Sequence[Any]] = {
    "hidden": ((64, 32, 16), (128, 64, 32), (256, 128, 64), (512, 128, 64)),
    "learning_rate": (1e-4, 3e-4, 1e-3),
    "batch_size": (32, 64, 128, 256),
    "dropout": (0.0, 0.1, 0.2, 0.3),
    "batch_norm": (False, True),
}
"""Table 9's ranges (hidden sizes such as [512, 128, 64], LR 1e-5–1e-3, batch 32–256,
dropout 0–0.3, batch-norm on/off), with smaller networks added: the predictor runs once per
drafted token on the device."""


def build_network(settings: MlpSettings) -> nn.Sequential:
    """Linear (+ BatchNorm) + ReLU (+ Dropout) per hidden layer, then one logit, its initial
    weights drawn from torch's generators as they are (:func:`train_mlp` seeds them)."""
    layers: list[nn.Module] = []
    width = 5
    for size in settings.hidden:
        layers.append(nn.Linear(width, size))
        if settings.batch_norm:
            layers.append(nn.BatchNorm1d(size))
        layers.append(nn.ReLU())
        if settings.dropout > 0:
            layers.append(nn.Dropout(settings.dropout))
        width = size
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


def standardiser(features: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], ...]:
    """Mean and spread of the training features (spread 1 where a feature is constant)."""
    mean = features.mean(axis=0)
    scale = features.std(axis=0)
    return mean, np.where(scale > 1e-12, scale, 1.0)


def _tensors(data: StopDataset, mean: Any, scale: Any) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.tensor((data.features - mean) / scale, dtype=torch.float32)
    y = torch.tensor(data.labels, dtype=torch.float32)
    return x, y


@dataclass(frozen=True, slots=True)
class TrainedMlp:
    policy: MlpStopPolicy
    settings: MlpSettings
    best_epoch: int
    validation_loss: float
    network: nn.Sequential


def train_mlp(
    train: StopDataset,
    validation: StopDataset,
    settings: MlpSettings,
    on_epoch: Callable[[int, float], None] | None = None,
) -> TrainedMlp:
    """Train on ``train``; keep the weights of the epoch with the lowest validation loss,
    stopping after ``patience`` epochs without improvement. Seeded with ``settings.seed``
    (initial weights, dropout, order); the caller's torch generators untouched."""
    with torch_seeded(settings.seed):
        return _train_mlp(train, validation, settings, on_epoch)


def _train_mlp(
    train: StopDataset,
    validation: StopDataset,
    settings: MlpSettings,
    on_epoch: Callable[[int, float], None] | None,
) -> TrainedMlp:
    mean, scale = standardiser(train.features)
    x, y = _tensors(train, mean, scale)
    vx, vy = _tensors(validation, mean, scale)
    net = build_network(settings)
    optimiser = torch.optim.Adam(net.parameters(), lr=settings.learning_rate)
    loss_fn = nn.BCEWithLogitsLoss()
    generator = torch.Generator().manual_seed(settings.seed)
    best, best_loss, best_epoch, stale = copy.deepcopy(net.state_dict()), float("inf"), 0, 0
    for epoch in range(1, settings.max_epochs + 1):
        net.train()
        order = torch.randperm(len(x), generator=generator)
        for i in range(0, len(x), settings.batch_size):
            batch = order[i : i + settings.batch_size]
            if len(batch) < 2 and settings.batch_norm:
                continue  # batch-norm needs two rows
            optimiser.zero_grad()
            loss = loss_fn(net(x[batch])[:, 0], y[batch])
            loss.backward()
            optimiser.step()
        net.eval()
        with torch.no_grad():
            val_loss = float(loss_fn(net(vx)[:, 0], vy))
        if on_epoch is not None:
            on_epoch(epoch, val_loss)
        if val_loss < best_loss - 1e-6:
            best, best_loss, best_epoch, stale = copy.deepcopy(net.state_dict()), val_loss, epoch, 0
        else:
            stale += 1
            if stale >= settings.patience:
                break
    net.load_state_dict(best)
    net.eval()
    policy = export_policy(net, mean, scale, threshold=0.5)
    return TrainedMlp(policy, settings, best_epoch, best_loss, net)


def export_policy(
    net: nn.Sequential,
    mean: Any,
    scale: Any,
    threshold: float,
    metadata: dict[str, Any] | None = None,
) -> MlpStopPolicy:
    """The eval-mode network as numpy layers: each BatchNorm folded into the Linear before
    it (y = γ·(Wx + b − μ)/√(σ² + ε) + β); ReLU between layers; Dropout is the identity."""
    layers: list[DenseLayer] = []
    modules = list(net)
    for i, module in enumerate(modules):
        if not isinstance(module, nn.Linear):
            continue
        weight = module.weight.detach().double().numpy().T.copy()
        bias = module.bias.detach().double().numpy().copy()
        follower = modules[i + 1] if i + 1 < len(modules) else None
        if isinstance(follower, nn.BatchNorm1d):
            assert follower.running_mean is not None and follower.running_var is not None
            gain = follower.weight.detach().double().numpy() / np.sqrt(
                follower.running_var.double().numpy() + follower.eps
            )
            weight = weight * gain
            bias = (bias - follower.running_mean.double().numpy()) * gain + (
                follower.bias.detach().double().numpy()
            )
        layers.append(DenseLayer(weight, bias))
    return MlpStopPolicy(
        mean=np.asarray(mean, dtype=np.float64),
        scale=np.asarray(scale, dtype=np.float64),
        layers=tuple(layers),
        threshold=threshold,
        metadata=dict(metadata or {}),
    )


def torch_probabilities(
    net: nn.Sequential, policy: MlpStopPolicy, features: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """P(accepted) from the torch network itself (eval mode), for checking the export."""
    x = torch.tensor((features - policy.mean) / policy.scale, dtype=torch.float64)
    with torch.no_grad():
        logits = net.double()(x)[:, 0]
    net.float()
    return np.asarray(torch.sigmoid(logits).numpy(), dtype=np.float64)


def sample_settings(
    space: Mapping[str, Sequence[Any]], count: int, seed: int
) -> list[dict[str, Any]]:
    """``count`` distinct random points of a search space (seeded)."""
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    points: list[dict[str, Any]] = []
    for _ in range(count * 50):
        if len(points) == count:
            break
        point = {k: v[int(rng.integers(len(v)))] for k, v in space.items()}
        key = repr(sorted(point.items()))
        if key not in seen:
            seen.add(key)
            points.append(point)
    return points


def search_mlp(
    train: StopDataset,
    validation: StopDataset,
    num_trials: int,
    seed: int,
    on_trial: Callable[[int, TrainedMlp], None] | None = None,
    max_epochs: int = 60,
) -> TrainedMlp:
    """Random search over :data:`MLP_SEARCH_SPACE`; the lowest validation loss wins."""
    best: TrainedMlp | None = None
    for trial, point in enumerate(sample_settings(MLP_SEARCH_SPACE, num_trials, seed)):
        settings = MlpSettings(seed=seed, max_epochs=max_epochs, **point)
        trained = train_mlp(train, validation, settings)
        if on_trial is not None:
            on_trial(trial, trained)
        if best is None or trained.validation_loss < best.validation_loss:
            best = trained
    if best is None:
        raise ValueError("the MLP search needs at least one trial")
    return best
