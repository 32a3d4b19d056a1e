"""The MLP predictor: torch training, export to numpy, and equal outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from edgespec.learn.stop.data import StopDataset
from edgespec.learn.stop.train import (
    MlpSettings,
    build_network,
    export_policy,
    sample_settings,
    torch_probabilities,
    train_mlp,
)
from edgespec.policies.stop_drafting import mlp_from_json


def separable(n: int, seed: int) -> StopDataset:
    """Accepted iff confidence (column 0) > 0.5, features on unlike scales."""
    rng = np.random.default_rng(seed)
    x = np.column_stack(
        [rng.uniform(0, 1, n), rng.uniform(0, 8, n), rng.uniform(0, 1, n),
         rng.normal(3, 0.2, n), rng.uniform(0, 1, n)]
    )  # fmt: skip
    y = (x[:, 0] > 0.5).astype(np.int64)
    return StopDataset(x, y, np.arange(n, dtype=np.int64), ())


@pytest.mark.parametrize("batch_norm", [False, True])
def test_numpy_export_equals_torch(batch_norm: bool) -> None:
    settings = MlpSettings(hidden=(16, 8, 4), batch_norm=batch_norm, dropout=0.2, seed=1)
    net = build_network(settings)
    if batch_norm:  # give the batch-norm layers non-trivial running statistics
        net.train()
        with torch.no_grad():
            for _ in range(5):
                net(torch.randn(64, 5) * 3 + 1)
    net.eval()
    data = separable(200, 0)
    mean, scale = data.features.mean(axis=0), data.features.std(axis=0)
    policy = export_policy(net, mean, scale, threshold=0.5)
    expected = torch_probabilities(net, policy, data.features)
    got = policy.accept_probability(data.features)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    # and through the JSON file format
    again = mlp_from_json(json.loads(json.dumps(policy.to_json())))
    np.testing.assert_allclose(again.accept_probability(data.features), expected, rtol=1e-9)
    assert again.keep_mask(data.features).tolist() == (expected >= 0.5).tolist()


def test_training_learns_a_separable_rule_and_stops_early() -> None:
    seen: list[int] = []
    trained = train_mlp(
        separable(600, 1),
        separable(200, 2),
        MlpSettings(hidden=(16, 8, 4), learning_rate=3e-3, max_epochs=40, patience=3),
        on_epoch=lambda epoch, loss: seen.append(epoch),
    )
    test = separable(300, 3)
    predicted = trained.policy.keep_mask(test.features)
    assert (predicted == (test.labels == 1)).mean() > 0.95
    assert 1 <= trained.best_epoch <= len(seen) <= 40


def test_sample_settings_are_distinct_and_seeded() -> None:
    space = {"a": (1, 2, 3), "b": (True, False)}
    points = sample_settings(space, 6, seed=0)
    assert len(points) == 6 and len({repr(sorted(p.items())) for p in points}) == 6
    assert sample_settings(space, 4, seed=5) == sample_settings(space, 4, seed=5)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"learning_rate": float("nan")}, "learning_rate must be a finite number > 0, got nan"),
        ({"learning_rate": float("inf")}, "learning_rate must be a finite number > 0, got inf"),
        ({"learning_rate": 0.0}, "learning_rate must be a finite number > 0, got 0.0"),
        ({"learning_rate": -1e-3}, "learning_rate must be a finite number > 0, got -0.001"),
        ({"hidden": (64, 0, 16)}, "hidden[1] must be >= 1, got 0"),
        ({"batch_size": 0}, "batch_size must be >= 1, got 0"),
        ({"max_epochs": 0}, "max_epochs must be >= 1, got 0"),
        ({"patience": -1}, "patience must be >= 1, got -1"),
        ({"dropout": 1.0}, "dropout must be in [0, 1), got 1.0"),
        ({"dropout": -0.1}, "dropout must be in [0, 1), got -0.1"),
        ({"dropout": float("nan")}, "dropout must be in [0, 1), got nan"),
    ],
)
def test_mlp_settings_refuse_a_bad_field_built_directly(
    change: dict[str, object], message: str
) -> None:
    """Was accepted when built: an infinite rate trained a NaN network, a zero rate
    nothing, a NaN dropout meant none, dropout 1 zeroed every activation; a NaN rate or a
    zero batch size failed only once training started."""
    with pytest.raises(ValueError) as error:
        MlpSettings(**change)  # type: ignore[arg-type]
    assert str(error.value) == message
    edge = MlpSettings(hidden=(1,), learning_rate=1e-9, batch_size=1, dropout=0.0, patience=1)
    assert (edge.hidden, edge.dropout, edge.max_epochs) == ((1,), 0.0, 60)
