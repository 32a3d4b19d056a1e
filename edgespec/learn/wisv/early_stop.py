"""Early stopping for the WISV head's training: after each epoch, the ROC AUC of the
net's scores against the base labels of validation instances (prompts set aside from the
training prompts, never the held-out ones). Training stops after ``patience`` epochs
without a better AUC, and the best epoch's weights are put back."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from edgespec.learn.wisv.auc import roc_auc


@dataclass(slots=True, eq=False)
class EarlyStop:
    """Validation inputs (standardised) and base labels; the best epoch seen so far."""

    z: torch.Tensor
    labels: npt.NDArray[np.int64]
    patience: int
    aucs: list[float] = field(default_factory=list)
    best_epoch: int = -1
    best_state: dict[str, Any] | None = None

    def update(self, net: nn.Module) -> bool:
        """Score the epoch just trained; whether to stop."""
        was_training = net.training
        net.eval()
        with torch.no_grad():
            scores = net(self.z).double().numpy()
        net.train(was_training)
        auc = roc_auc(scores, self.labels)
        self.aucs.append(auc)
        if self.best_state is None or auc > self.aucs[self.best_epoch]:
            self.best_epoch = len(self.aucs) - 1
            self.best_state = copy.deepcopy(net.state_dict())
        return len(self.aucs) - 1 - self.best_epoch >= self.patience

    def restore(self, net: nn.Module) -> None:
        """Put the best epoch's weights back."""
        if self.best_state is not None:
            net.load_state_dict(self.best_state)
