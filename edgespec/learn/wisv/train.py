"""Training the WISV decision head (seed 003, Eqs. 23–27) with torch on a ``wisv-data``
dataset, exported as a numpy :class:`~edgespec.policies.semantic.head.DecisionHead`.

* **Split** by prompt: ``holdout`` of the prompts with mismatches (at least one) are held
  out. No prompt's mismatches are on both sides; with several datasets, no group's
  (:mod:`edgespec.learn.wisv.union`).
* **Instances** (:func:`build_instances`): each episode (one prompt's mismatches) gets
  ``draws`` CSI draws (:func:`~edgespec.policies.semantic.relabel.sample_channel`), and
  every mismatch × draw is one instance x = [h_d ; h_t ; c(draw)]. Its target is the
  rejection target under the named repair budget
  (:func:`~edgespec.policies.semantic.relabel.rejection_targets`): the base label y_j
  under the default ``keep-critical``, the same CSI inputs included; Eq. 31's relabelled
  probability r_j(κ) under ``kappa-critical`` (the Fig. 5 ablation's relabelled head).
  The held-out instances use their own draws (seed + 1).
* **Network** (Eq. 25): Linear(d_in → width) → ReLU → Dropout → Linear(width → 1) on
  standardised inputs (training mean and standard deviation; a constant column gets
  scale 1). Width 64, dropout 0.1.
* **Loss** (Eq. 26): binary cross-entropy on the (soft) targets, class-balanced: the
  positive term is weighted by Σ(1 − t)/Σt over the training targets. AdamW (lr 1e-3,
  weight decay 1e-2), batches of 256, 100 epochs, seeded. With ``validation`` > 0,
  that share of the training prompts is set aside and training stops early on their AUC
  (:mod:`edgespec.learn.wisv.early_stop`).
* **Export**: W1 = first.weightᵀ, b1, W2 = second.weightᵀ, b2, with the standardisation as
  the head's ``mean`` and ``scale``. The numpy head gives the torch network's
  probabilities (eval mode).
* **Metrics** (:mod:`edgespec.learn.wisv.evaluation`) on the held-out prompts: ROC AUC
  of p against the relabelled hard labels (r ≥ 0.5) and against the base labels,
  accuracy at τ = 0.5, and the class balance. The **acceptance table**
  (:func:`~edgespec.learn.wisv.evaluation.reject_shares`) gives the share of held-out mismatches
  the head rejects at each threshold T = 0..16 (τ = T/16, reject iff p ≥ τ), on a poor
  link (20 Mbit/s) and a good one (500 Mbit/s). Both have PER 0 and RTT 50 ms (Table I).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from edgespec.learn.progress import EpochDone
from edgespec.learn.settings_checks import (
    MAX_WIDTH,
    check_at_least_one,
    check_at_most,
    check_dropout,
    check_non_negative,
    check_positive,
)
from edgespec.learn.wisv.dataset import WisvDataset
from edgespec.learn.wisv.early_stop import EarlyStop
from edgespec.learn.wisv.export import export_head
from edgespec.models.seeding import torch_seeded
from edgespec.policies.semantic.csi import ChannelState, csi_features
from edgespec.policies.semantic.head import THRESHOLD_STEPS, DecisionHead
from edgespec.policies.semantic.relabel import (
    BUDGETS,
    DEFAULT_BUDGET,
    Episode,
    hard_repairs,
    rejection_targets,
    sample_channel,
)

FloatArray = npt.NDArray[np.float64]
THRESHOLDS: tuple[int, ...] = tuple(range(THRESHOLD_STEPS + 1))
CHANNELS: dict[str, ChannelState] = {
    "poor": ChannelState(uplink_bps=20e6, per=0.0, rtt_s=0.05),
    "good": ChannelState(uplink_bps=500e6, per=0.0, rtt_s=0.05),
}
"""The acceptance table's links: the paper's 20 and 500 Mbit/s at Table I's RTT 50 ms."""


@dataclass(frozen=True, slots=True)
class TrainSettings:
    width: int = 64
    dropout: float = 0.1
    epochs: int = 100
    learning_rate: float = 1e-3
    weight_decay: float = 1e-2
    batch_size: int = 256
    draws: int = 8
    holdout: float = 0.25
    budget: str = DEFAULT_BUDGET
    """The relabelling's repair budget (:data:`~edgespec.policies.semantic.relabel.BUDGETS`)."""
    seed: int = 0
    validation: float = 0.0
    """Share of the training prompts for early stopping (0: none, all ``epochs``)."""
    patience: int = 10

    @property
    def relabel(self) -> bool:
        """Whether the budget relaxes critical mismatches (the targets differ from y)."""
        return self.budget != DEFAULT_BUDGET

    @property
    def suffix(self) -> str:
        """The file stem's suffix: none for the default budget, else ``-BUDGET``."""
        return "" if self.budget == DEFAULT_BUDGET else f"-{self.budget}"

    def __post_init__(self) -> None:
        check_at_least_one(
            width=self.width,
            epochs=self.epochs,
            batch_size=self.batch_size,
            draws=self.draws,
            patience=self.patience,
        )
        check_at_most("width", self.width, MAX_WIDTH)
        check_dropout(self.dropout)
        if not 0.0 < self.holdout < 1.0:
            raise ValueError(f"holdout must be in (0, 1), got {self.holdout}")
        if not 0.0 <= self.validation < 1.0:
            raise ValueError(f"validation must be in [0, 1), got {self.validation}")
        check_positive("learning_rate", self.learning_rate)
        check_non_negative("weight_decay", self.weight_decay)
        if self.budget not in BUDGETS:
            raise ValueError(f"unknown budget {self.budget!r}: known are {', '.join(BUDGETS)}")


Split = list[tuple[int, npt.NDArray[np.int64], Episode]]
Groups = dict[int, tuple[str, int]]
"""Episode prompt index → its group (dataset, prompt): a group goes to one side whole."""


def split_list(
    episodes: Split, share: float, seed: int, groups: Groups | None = None
) -> tuple[Split, Split]:
    """(kept, set aside): ``share`` of the groups of ``episodes`` (each episode its own
    group without ``groups``; at least one, and at least one left) set aside, with
    ``seed``."""
    keys = [groups[p] if groups else (str(p), p) for p, _, _ in episodes]
    unique = list(dict.fromkeys(keys))
    if len(unique) < 2:
        raise ValueError(f"need mismatches from at least 2 prompts, got {len(unique)}")
    count = min(len(unique) - 1, max(1, round(share * len(unique))))
    chosen = np.random.default_rng(seed).choice(len(unique), count, replace=False)
    aside = {unique[i] for i in chosen.tolist()}
    kept = [e for e, k in zip(episodes, keys, strict=True) if k not in aside]
    return kept, [e for e, k in zip(episodes, keys, strict=True) if k in aside]


def split_episodes(
    data: WisvDataset, holdout: float, seed: int, groups: Groups | None = None
) -> tuple[Split, Split]:
    """(training, held-out) episodes: whole prompts (whole ``groups``) to one side,
    ``holdout`` of them (at least one, and at least one left to train on) held out,
    chosen with ``seed``."""
    return split_list(data.episodes(), holdout, seed, groups)


@dataclass(frozen=True, slots=True, eq=False)
class Instances:
    """Rows of x = [h_d ; h_t ; c], their training targets, the relabelled hard labels,
    the base labels and the dataset row each comes from."""

    x: npt.NDArray[np.float32]
    target: npt.NDArray[np.float32]
    hard: npt.NDArray[np.int64]
    base: npt.NDArray[np.int64]
    row: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.target.shape[0])


def inputs(data: WisvDataset, rows: npt.NDArray[np.int64], channel: ChannelState) -> Any:
    """x for dataset ``rows`` on one channel (float32, n × d_in)."""
    c = np.broadcast_to(np.asarray(csi_features(channel), dtype=np.float32), (rows.size, 4))
    hidden = (data.draft_hidden[rows], data.target_hidden[rows])
    return np.concatenate([*(h.astype(np.float32) for h in hidden), c], axis=1)


def build_instances(
    data: WisvDataset, episodes: Split, draws: int, budget: str, seed: int
) -> Instances:
    """``draws`` CSI draws per episode (module docstring), in episode order, with targets
    under the named repair ``budget``."""
    rng = np.random.default_rng(seed)
    xs, targets, hards, bases, rows = [], [], [], [], []
    for _, idx, episode in episodes:
        base = np.asarray(episode.critical, dtype=np.int64)
        for _ in range(draws):
            channel = sample_channel(rng)
            soft = rejection_targets(episode, channel.quality, budget)
            xs.append(inputs(data, idx, channel))
            targets.append(soft)
            hards.append(hard_repairs(soft))
            bases.append(base)
            rows.append(idx)
    if not xs:
        raise ValueError("no episodes to build instances from")
    return Instances(
        x=np.concatenate(xs).astype(np.float32),
        target=np.concatenate(targets).astype(np.float32),
        hard=np.concatenate(hards),
        base=np.concatenate(bases),
        row=np.concatenate(rows),
    )


class HeadNet(nn.Module):
    """Eq. 25 on standardised inputs: Linear → ReLU → Dropout → Linear (a logit)."""

    def __init__(self, d_in: int, width: int, dropout: float) -> None:
        super().__init__()
        self.first = nn.Linear(d_in, width)
        self.dropout = nn.Dropout(dropout)
        self.second = nn.Linear(width, 1)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.second(self.dropout(torch.relu(self.first(z))))[:, 0]
        return out


def standardiser(x: npt.NDArray[np.float32]) -> tuple[FloatArray, FloatArray]:
    mean = x.astype(np.float64).mean(axis=0)
    scale = x.astype(np.float64).std(axis=0)
    return mean, np.where(scale > 1e-6, scale, 1.0)


def positive_weight(target: npt.NDArray[np.float32]) -> float:
    """Σ(1 − t)/Σt: the positive term's weight that balances the classes (1 if no
    positive mass)."""
    positive = float(target.sum())
    return (len(target) - positive) / positive if positive > 0 else 1.0


@dataclass(frozen=True, slots=True, eq=False)
class TrainedHead:
    net: HeadNet
    head: DecisionHead
    losses: tuple[float, ...]
    """Mean training loss per epoch (dropout on)."""
    positive_weight: float
    validation_auc: tuple[float, ...] = ()
    """With early stopping: the validation AUC (base labels) after each epoch."""
    best_epoch: int | None = None
    """With early stopping: the epoch (from 0) whose weights were kept."""


def train_head(
    train: Instances,
    draft_hidden: int,
    target_hidden: int,
    settings: TrainSettings,
    validation: Instances | None = None,
    on_epoch: EpochDone | None = None,
) -> TrainedHead:
    """Class-balanced BCE with AdamW (module docstring); returns the net and its export.
    With ``validation``, early stopping on its AUC (:mod:`edgespec.learn.wisv.early_stop`).
    ``on_epoch`` hears each epoch's mean loss. Seeded with ``settings.seed``; the caller's
    torch generators untouched."""
    with torch_seeded(settings.seed):
        mean, scale = standardiser(train.x)
        z = torch.tensor((train.x - mean) / scale, dtype=torch.float32)
        t = torch.tensor(train.target, dtype=torch.float32)
        weight = positive_weight(train.target)
        loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(weight, dtype=torch.float32))
        net = HeadNet(z.shape[1], settings.width, settings.dropout)
        optimiser = torch.optim.AdamW(
            net.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
        )
        generator = torch.Generator().manual_seed(settings.seed)
        losses = []
        stop = None
        if validation is not None:
            zv = torch.tensor((validation.x - mean) / scale, dtype=torch.float32)
            stop = EarlyStop(zv, validation.base, settings.patience)
        net.train()
        for _ in range(settings.epochs):
            order = torch.randperm(len(z), generator=generator)
            total = 0.0
            for i in range(0, len(z), settings.batch_size):
                batch = order[i : i + settings.batch_size]
                optimiser.zero_grad()
                loss = loss_fn(net(z[batch]), t[batch])
                loss.backward()  # type: ignore[no-untyped-call]
                optimiser.step()
                total += float(loss.detach()) * len(batch)
            losses.append(total / len(z))
            if on_epoch is not None:
                on_epoch(len(losses), losses[-1])
            if stop is not None and stop.update(net):
                break
        if stop is not None:
            stop.restore(net)
        net.eval()
        head = export_head(net, mean, scale, draft_hidden, target_hidden)
        if stop is None:
            return TrainedHead(net, head, tuple(losses), weight)
        aucs = tuple(stop.aucs)
        return TrainedHead(net, head, tuple(losses), weight, aucs, stop.best_epoch)
