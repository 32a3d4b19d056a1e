"""`edgespec train wisv` on several datasets (prompts held out by group), local labels and
early stopping on validation prompts."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.learn.wisv.train import (
    TrainSettings,
    build_instances,
    split_episodes,
    split_list,
    train_head,
)
from edgespec.learn.wisv.union import PROMPT_STRIDE, union
from tests.learn.wisv.test_train import DRAFT, TARGET, synthetic


def test_union_renumbers_and_groups_the_same_prompt_across_datasets() -> None:
    a = dataclasses.replace(synthetic(prompts=6, seed=1), meta={"dataset": "gsm8k"})
    b = dataclasses.replace(synthetic(prompts=6, seed=2), meta={"dataset": "gsm8k"})
    c = dataclasses.replace(synthetic(prompts=4, seed=3), meta={"dataset": "cnndm"})
    data, groups = union([a, b, c])
    assert len(data) == len(a) + len(b) + len(c)
    s = PROMPT_STRIDE
    expected = [*range(6), *range(s, s + 6), *range(2 * s, 2 * s + 4)]
    assert data.prompts["prompts"].tolist() == expected
    assert groups[PROMPT_STRIDE + 3] == groups[3] == ("gsm8k", 3)
    assert groups[2 * PROMPT_STRIDE + 3] == ("cnndm", 3)
    assert len(data.episodes()) == 16  # no two datasets' episodes merged
    for seed in range(5):
        train, held = split_episodes(data, 0.3, seed, groups)
        held_groups = {groups[p] for p, _, _ in held}
        assert not held_groups & {groups[p] for p, _, _ in train}
        assert len(held_groups) == 3  # 0.3 of the 10 groups
        assert len(held) == sum(2 if g[0] == "gsm8k" else 1 for g in held_groups)
    one, one_groups = union([a])
    assert one is a
    grouped, plain = split_episodes(one, 0.25, 0, one_groups), split_episodes(a, 0.25, 0)
    for side in (0, 1):  # one dataset splits as before (the shipped head's split)
        assert [p for p, _, _ in grouped[side]] == [p for p, _, _ in plain[side]]
    other = dataclasses.replace(a, draft_hidden=np.zeros((len(a), DRAFT + 1), np.float16))
    with pytest.raises(ValueError, match="hidden sizes differ"):
        union([a, other])


def test_local_labels_replace_the_base_labels_of_rollout_rows() -> None:
    a = synthetic(prompts=4)
    local = 1 - a.rows["critical"]
    rows = {**a.rows, "accepted": np.zeros(len(a), np.int8), "local_critical": local}
    rows["off_reference"] = np.zeros(len(a), np.int8)
    rolled = dataclasses.replace(a, rows=rows)
    data, _ = union([rolled], "local")
    np.testing.assert_array_equal(data.rows["critical"], local)
    data, _ = union([rolled, a], "local")  # the lossless one keeps its labels
    np.testing.assert_array_equal(
        data.rows["critical"], np.concatenate([local, a.rows["critical"]])
    )
    with pytest.raises(ValueError, match="unknown labels 'both'"):
        union([a], "both")


def test_early_stopping_keeps_the_best_validation_epoch() -> None:
    data = synthetic(prompts=24, per_prompt=4)
    train_eps, _ = split_episodes(data, 0.25, 0)
    fit_eps, val_eps = split_list(train_eps, 0.25, 2)
    assert len(val_eps) == 4 and not {p for p, _, _ in fit_eps} & {p for p, _, _ in val_eps}
    train = build_instances(data, fit_eps, 2, "keep-critical", 0)
    validation = build_instances(data, val_eps, 2, "keep-critical", 3)
    settings = TrainSettings(width=8, epochs=60, batch_size=16, patience=3, validation=0.25)
    trained = train_head(train, DRAFT, TARGET, settings, validation)
    aucs = trained.validation_auc
    assert trained.best_epoch == int(np.argmax(aucs))  # the first best
    assert len(aucs) == len(trained.losses) == trained.best_epoch + 4 < 60  # stopped early
    from edgespec.learn.wisv.evaluation import evaluate

    assert evaluate(trained.head, validation)["auc_base"] == pytest.approx(aucs[trained.best_epoch])
    plain = train_head(train, DRAFT, TARGET, dataclasses.replace(settings, validation=0.0))
    assert len(plain.losses) == 60 and plain.best_epoch is None and plain.validation_auc == ()
    with pytest.raises(ValueError, match="validation must be in"):
        TrainSettings(validation=1.0)


def test_the_train_command_takes_several_datasets(tmp_path: Path) -> None:
    paths = []
    for k, name in enumerate(("gsm8k", "cnndm")):
        path = tmp_path / f"{name}.npz"
        data = synthetic(prompts=12, seed=k)
        dataclasses.replace(data, meta={"target": "tiny", "dataset": name}).save(path)
        paths.append(path)
    out = tmp_path / "out"
    args = ["train", "wisv", "--data", str(paths[0]), "--data", str(paths[1])]
    args += ["--out-dir", str(out), "--epochs", "30", "--width", "8", "--validation", "0.2"]
    assert main([*args, "--patience", "2"]) == 0
    metrics = json.loads((out / "tiny-metrics.json").read_text())
    assert metrics["data"] == [str(p) for p in paths]
    assert metrics["dataset"]["prompts"] == metrics["dataset"]["prompts_with_mismatches"] == 24
    # 24 groups: 6 held out, then 0.2 of the other 18 (4) for early stopping
    assert metrics["prompts"] == {"train": 14, "held_out": 6, "validation": 4}
    assert set(metrics["report"]) == {"train", "validation", "held_out"}
    assert metrics["labels"] == "base"
    assert metrics["epochs_run"] == min(30, metrics["best_epoch"] + 3)
    assert metrics["settings"]["validation"] == 0.2 and metrics["settings"]["patience"] == 2
    # the same split and instances: a baseline head scores as it did when it was trained
    head = out / "tiny-head.json"
    assert main([*args, "--patience", "2", "--name", "again", "--baseline-head", str(head)]) == 0
    again = json.loads((out / "again-metrics.json").read_text())["report"]
    for side in ("train", "held_out"):
        assert again["baseline"][side] == pytest.approx(metrics["report"][side], abs=1e-6)
    assert main([*args, "--baseline-head", str(tmp_path / "none.json")]) == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"learning_rate": float("inf")}, "learning_rate must be a finite number > 0, got inf"),
        ({"learning_rate": float("nan")}, "learning_rate must be a finite number > 0, got nan"),
        ({"learning_rate": 0.0}, "learning_rate must be a finite number > 0, got 0.0"),
        ({"weight_decay": -0.1}, "weight_decay must be a finite number >= 0, got -0.1"),
        ({"weight_decay": float("nan")}, "weight_decay must be a finite number >= 0, got nan"),
        ({"weight_decay": float("inf")}, "weight_decay must be a finite number >= 0, got inf"),
    ],
)
def test_train_settings_refuse_a_bad_rate_naming_it(change: dict[str, float], message: str) -> None:
    """Was accepted (NaN, inf), or refused without naming the field and value."""
    with pytest.raises(ValueError) as error:
        TrainSettings(**change)  # type: ignore[arg-type]
    assert str(error.value) == message
