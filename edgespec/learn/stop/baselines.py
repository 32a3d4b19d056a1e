"""The tree baselines of WISP Tables 4, 10 and 11: LightGBM, XGBoost and Random Forest,
each with a small random search over Table 9's space, selected by validation log-loss.
LightGBM and XGBoost stop early on the validation set (30 rounds without improvement);
a Random Forest has no boosting rounds to stop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from edgespec.learn.stop.data import StopDataset
from edgespec.learn.stop.train import sample_settings

Scorer = Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]

SPACES: dict[str, dict[str, Sequence[Any]]] = {
    "lightgbm": {
        "num_leaves": (7, 15, 31, 63),
        "max_depth": (-1, 4, 6, 8),
        "learning_rate": (0.02, 0.05, 0.1),
        "n_estimators": (200, 400),
        "subsample": (0.7, 0.85, 1.0),
        "colsample_bytree": (0.6, 0.8, 1.0),
        "min_child_samples": (10, 20, 50),
        "reg_lambda": (0.0, 1.0, 5.0),
        "reg_alpha": (0.0, 0.1, 1.0),
    },
    "xgboost": {
        "n_estimators": (200, 400),
        "max_depth": (3, 4, 6, 8),
        "learning_rate": (0.02, 0.05, 0.1),
        "subsample": (0.7, 0.85, 1.0),
        "colsample_bytree": (0.6, 0.8, 1.0),
        "min_child_weight": (1, 5, 10),
        "gamma": (0.0, 0.1, 1.0),
        "reg_lambda": (0.0, 1.0, 5.0),
        "reg_alpha": (0.0, 0.1, 1.0),
    },
    "random_forest": {
        "n_estimators": (100, 200, 400),
        "max_depth": (None, 6, 10, 16),
        "min_samples_split": (2, 5, 10),
        "min_samples_leaf": (1, 2, 5, 10),
        "max_features": ("sqrt", 0.6, 1.0),
    },
}
EARLY_STOPPING_ROUNDS = 30


@dataclass(frozen=True, slots=True, eq=False)
class TrainedTree:
    name: str
    params: dict[str, Any]
    validation_log_loss: float
    model: Any

    def scores(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """P(accepted) per row."""
        return np.asarray(self.model.predict_proba(features)[:, 1], dtype=np.float64)


def log_loss(labels: npt.NDArray[np.int64], probs: npt.NDArray[np.float64]) -> float:
    p = np.clip(probs, 1e-12, 1 - 1e-12)
    return float(-(labels * np.log(p) + (1 - labels) * np.log(1 - p)).mean())


def _fit(name: str, params: dict[str, Any], train: StopDataset, val: StopDataset, seed: int) -> Any:
    x, y, vx, vy = train.features, train.labels, val.features, val.labels
    if name == "lightgbm":
        import lightgbm

        model = lightgbm.LGBMClassifier(
            random_state=seed, subsample_freq=1, n_jobs=1, verbose=-1, **params
        )
        stop = lightgbm.early_stopping(EARLY_STOPPING_ROUNDS, verbose=False)
        model.fit(x, y, eval_X=(vx,), eval_y=(vy,), callbacks=[stop])
        return model
    if name == "xgboost":
        import xgboost

        model = xgboost.XGBClassifier(
            random_state=seed,
            n_jobs=1,
            eval_metric="logloss",
            early_stopping_rounds=EARLY_STOPPING_ROUNDS,
            **params,
        )
        model.fit(x, y, eval_set=[(vx, vy)], verbose=False)
        return model
    if name == "random_forest":
        from sklearn.ensemble import RandomForestClassifier

        model = RandomForestClassifier(random_state=seed, n_jobs=1, **params)
        model.fit(x, y)
        return model
    raise ValueError(f"unknown baseline {name!r}; known: {sorted(SPACES)}")


def search_tree(
    name: str,
    train: StopDataset,
    validation: StopDataset,
    num_trials: int,
    seed: int,
    on_trial: Callable[[int, TrainedTree], None] | None = None,
) -> TrainedTree:
    """Random search over ``SPACES[name]``; the lowest validation log-loss wins."""
    if name not in SPACES:
        raise ValueError(f"unknown baseline {name!r}; known: {sorted(SPACES)}")
    best: TrainedTree | None = None
    for trial, params in enumerate(sample_settings(SPACES[name], num_trials, seed)):
        model = _fit(name, params, train, validation, seed)
        trained = TrainedTree(name, params, 0.0, model)
        loss = log_loss(validation.labels, trained.scores(validation.features))
        trained = TrainedTree(name, params, loss, model)
        if on_trial is not None:
            on_trial(trial, trained)
        if best is None or loss < best.validation_log_loss:
            best = trained
    if best is None:
        raise ValueError("a baseline search needs at least one trial")
    return best
