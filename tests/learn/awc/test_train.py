"""The WC-DNN trainer: the numpy export equals the torch network, a learnable rule is
learnt, the split keeps scenarios whole."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from edgespec.learn.awc.train import (  # noqa: E402
    AwcDataset,
    AwcTrainSettings,
    evaluate,
    join_labels,
    split_by_scenario,
    torch_predict,
    train_wc_dnn,
)
from edgespec.policies.wc_dnn import AWC_FEATURE_NAMES  # noqa: E402


def _synthetic(num_scenarios: int, per: int, seed: int) -> AwcDataset:
    """Label 1 (fused) when the RTT is high, else 10; contexts scattered around it."""
    rng = np.random.default_rng(seed)
    rows, labels, ids = [], [], []
    for sid in range(num_scenarios):
        rtt = rng.uniform(5, 120)
        label = 1.0 if rtt > 60 else 10.0
        for _ in range(per):
            rows.append([rng.uniform(0, 1), rng.uniform(0.3, 0.9), rtt + rng.normal(0, 2),
                         rng.uniform(20, 80), rng.integers(1, 13)])  # fmt: skip
            labels.append(label)
            ids.append(sid)
    return AwcDataset(np.array(rows, float), np.array(labels), np.array(ids, np.int64))


def test_numpy_export_equals_torch() -> None:
    data = _synthetic(6, 10, 0)
    net, model = train_wc_dnn(data, AwcTrainSettings(width=16, epochs=2))
    x = data.features.copy()
    x[0, 3] = np.nan  # imputed with the mean in both
    np.testing.assert_allclose(model.predict(x), torch_predict(net, model, x), atol=1e-9)


def test_a_learnable_rule_is_learnt_on_held_out_scenarios() -> None:
    torch.set_num_threads(1)
    train, held = split_by_scenario(_synthetic(60, 20, 1), 0.25, 0)
    _, model = train_wc_dnn(train, AwcTrainSettings(width=32, epochs=40, learning_rate=3e-3))
    report = evaluate(model, held)
    assert report["accuracy"] > 0.9
    assert report["mae_gamma"] < 1.0
    assert report["fused_recall"] is not None and report["fused_recall"] > 0.9
    assert report["mode_accuracy"] >= report["accuracy"]  # the mode can be right, γ not
    assert report["fused_share"] == float(np.mean(held.labels == 1))


def test_mode_accuracy_counts_only_the_fused_or_distributed_choice() -> None:
    """A model answering γ = 5 everywhere: its mode is right on every distributed label
    (γ 3 or 9), wrong on every fused one, and its γ right on none."""

    class Five:
        def predict(self, x: np.ndarray) -> np.ndarray:
            return np.full(len(x), 5.0)

    data = AwcDataset(np.zeros((4, 5)), np.array([1.0, 3.0, 9.0, 1.0]), np.arange(4))
    report = evaluate(Five(), data)  # type: ignore[arg-type]
    assert (report["accuracy"], report["mode_accuracy"]) == (0.0, 0.5)
    assert (report["fused_recall"], report["fused_share"]) == (0.0, 0.5)


def test_split_keeps_scenarios_whole_and_join_labels() -> None:
    data = _synthetic(10, 3, 2)
    train, held = split_by_scenario(data, 0.2, 0)
    assert set(train.scenario_ids).isdisjoint(held.scenario_ids)
    assert len(set(held.scenario_ids)) == 2 and len(train.labels) + len(held.labels) == 30
    contexts = {"scenario_id": [0, 0, 1, 2]} | {n: [1.0, 2.0, 3.0, 4.0] for n in AWC_FEATURE_NAMES}
    joined = join_labels(contexts, {0: 7, 2: 1})  # scenario 1 is unlabelled: dropped
    assert joined.labels.tolist() == [7.0, 7.0, 1.0]
    assert joined.features[:, 0].tolist() == [1.0, 2.0, 4.0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"learning_rate": float("inf")}, "learning_rate must be a finite number > 0, got inf"),
        ({"learning_rate": float("nan")}, "learning_rate must be a finite number > 0, got nan"),
        ({"learning_rate": -1.0}, "learning_rate must be a finite number > 0, got -1.0"),
        ({"weight_decay": -0.1}, "weight_decay must be a finite number >= 0, got -0.1"),
        ({"weight_decay": float("nan")}, "weight_decay must be a finite number >= 0, got nan"),
        ({"weight_decay": float("inf")}, "weight_decay must be a finite number >= 0, got inf"),
        ({"width": 0}, "width must be >= 1, got 0"),
        ({"width": 1025}, "width must be <= 1024, got 1025"),
        ({"batch_size": -2}, "batch_size must be >= 1, got -2"),
    ],
)
def test_settings_refuse_a_bad_value_built_directly(change: dict[str, float], message: str) -> None:
    """Was accepted: only the CLI flags refused inf and nan."""
    with pytest.raises(ValueError) as error:
        AwcTrainSettings(**change)  # type: ignore[arg-type]
    assert str(error.value) == message
