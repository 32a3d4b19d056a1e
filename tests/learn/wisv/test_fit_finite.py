"""`edgespec train wisv` never writes a NaN head: a non-finite hidden state is refused at
load naming the file, array, row and column; a diverged training writes nothing; a bad
--baseline-head (and wisv-data's --rollout-head) is a one-line usage error found before
any training or model loading."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import edgespec.learn.wisv.fit as fit
import edgespec.learn.wisv.train as wisv_train
from edgespec.cli import main
from edgespec.learn.wisv.train import TrainedHead
from tests.learn.wisv.test_train import synthetic
from tests.policies.semantic.test_head import hand_head


def _data(tmp_path: Path, array: str = "", row: int = 0, col: int = 0, value: float = 0.0) -> Path:
    """The synthetic dataset, with ``array[row, col] = value`` when ``array`` is given."""
    data = synthetic()
    if array:
        values = getattr(data, array).copy()
        values[row, col] = value
        data = dataclasses.replace(data, **{array: values})
    path = tmp_path / "d.npz"
    data.save(path)
    return path


def _train(data: Path, out: Path, *extra: str) -> int:
    return main(["train", "wisv", "--data", str(data), "--out-dir", str(out), *extra])


@pytest.mark.parametrize(
    ("array", "row", "col", "value", "shown"),
    [
        ("draft_hidden", 3, 2, math.nan, "nan"),
        ("target_hidden", 0, 4, math.inf, "inf"),
        ("draft_hidden", 7, 1, -math.inf, "-inf"),
    ],
)
def test_a_non_finite_hidden_state_is_refused_at_load(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    array: str,
    row: int,
    col: int,
    value: float,
    shown: str,
) -> None:
    data, out = _data(tmp_path, array, row, col, value), tmp_path / "o"
    assert _train(data, out, "--epochs", "2") == 2
    assert capsys.readouterr().err == (
        "edgespec train wisv: "
        f"--data {data}: {array}[{row}, {col}] is {shown}, not a finite number\n"
    )
    assert not out.exists()


def test_a_diverged_training_writes_no_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    assert _train(_data(tmp_path), out, "--epochs", "2", "--lr", "1e30") == 2
    err = capsys.readouterr().err.splitlines()
    assert err[:2] == ["epoch 1/2: loss nan", "epoch 2/2: loss nan"]  # each epoch said
    assert err[-1] == (
        "edgespec train wisv: training diverged: the head's w1[0, 0] is nan, not a finite number; "
        "nothing written (try a lower --lr)"
    )
    assert not out.exists()


def test_a_non_finite_loss_writes_no_head(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def inf_loss(*args: Any, **kwargs: Any) -> TrainedHead:
        return TrainedHead(None, hand_head(), (0.7, math.inf), 1.0)  # type: ignore[arg-type]

    monkeypatch.setattr(wisv_train, "train_head", inf_loss)
    out = tmp_path / "o"
    assert _train(_data(tmp_path), out) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "edgespec train wisv: training diverged: the loss of epoch 2 is inf; nothing written "
        "(try a lower --lr)"
    )
    assert not out.exists()


def _never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the long work started before the head file was checked")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"draft_hidden": 6', "not JSON: Expecting ',' delimiter: line 1 column 19 (char 18)"),
        ('{"draft_hidden": 6}', "missing keys 'target_hidden', 'mean', 'scale', 'w1', 'b1', "),
        ("[]", "expected a JSON object, got list"),
    ],
)
def test_a_bad_baseline_head_is_refused_before_training(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    problem: str,
) -> None:
    head = tmp_path / "head.json"
    head.write_text(text)
    monkeypatch.setattr(fit, "_load", _never)
    monkeypatch.setattr(wisv_train, "train_head", _never)
    assert _train(tmp_path / "d.npz", tmp_path / "o", "--baseline-head", str(head)) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"edgespec train wisv: --baseline-head: head policy 'wisv': {head} is not a decision "
        f"head: {problem}"
    )
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_nan_rollout_head_is_refused_before_the_models_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import edgespec.models.loading as loading

    data = hand_head().to_json()
    data["w1"][1][0] = math.nan
    head = tmp_path / "head.json"
    head.write_text(json.dumps(data))
    monkeypatch.setattr(loading, "load_model", _never)
    argv = ["train", "wisv-data", "--out", str(tmp_path / "x.npz"), "--target", "t"]
    assert main([*argv, "--draft", "d", "--prompts", "1", "--rollout-head", str(head)]) == 2
    assert capsys.readouterr().err == (
        "edgespec train wisv-data: "
        f"--rollout-head: head policy 'wisv': {head} is not a decision head: w1[1, 0] is nan, "
        "not a finite number\n"
    )
    assert not (tmp_path / "x.npz").exists()


def test_finite_data_still_trains(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert _train(_data(tmp_path), out, "--epochs", "2", "--width", "8") == 0
    head = fit.read_head("--baseline-head", out / "tiny-head.json")
    assert np.isfinite(head.w1).all()
    assert sorted(p.name for p in out.iterdir()) == [
        "tiny-acceptance.json", "tiny-head.json", "tiny-metrics.json",
    ]  # fmt: skip


def test_validation_with_one_training_prompt_left_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """16 prompts, 15 held out: --validation has none to set aside (it was a ValueError
    traceback, where --holdout's own split is one line)."""
    out = tmp_path / "o"
    argv = ("--epochs", "1", "--holdout", "0.95", "--validation", "0.5")
    assert _train(_data(tmp_path), out, *argv) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "edgespec train wisv: --validation 0.5: no training prompt to set aside after "
        "--holdout (need mismatches from at least 2 prompts, got 1); capture more prompts, or "
        "give --validation 0"
    )
    assert not out.exists()
