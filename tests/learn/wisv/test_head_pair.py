"""A decision head records the model pair it was trained for (``trained_for``: target and
draft as edgespec's files name them, and the target's vocabulary size): ``wisv-data``
records the target's vocabulary size in every shard and its summary, ``train wisv`` writes
the pair of its captures into the head, and a head file without the record (written
before it existed) still loads, as ``trained_for = None``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgespec.cli import main
from edgespec.learn.wisv.dataset import WisvDataset
from edgespec.learn.wisv.export import trained_pair
from edgespec.learn.wisv.shards import parts_folder
from edgespec.policies.semantic.head import DecisionHead, TrainedFor, load_head
from tests.learn.wisv.test_data_command import _run, prompt_files, tiny_pair
from tests.learn.wisv.test_train import synthetic
from tests.runtime.semantic_helpers import constant_head

__all__ = ["prompt_files", "tiny_pair"]  # the capture's fixtures, used by name


def _train(tmp_path: Path, *metas: dict[str, Any]) -> dict[str, Any]:
    """``train wisv`` on synthetic captures with ``metas``; the head file's JSON."""
    argv = ["train", "wisv", "--out-dir", str(tmp_path / "out"), "--epochs", "2", "--name", "h"]
    for k, meta in enumerate(metas):
        path = tmp_path / f"d{k}.npz"
        dataclasses.replace(synthetic(seed=k), meta=meta).save(path)
        argv += ["--data", str(path)]
    assert main([*argv, "--width", "4"]) == 0
    return dict(json.loads((tmp_path / "out" / "h-head.json").read_text()))


def test_the_capture_records_the_targets_vocabulary(
    tmp_path: Path, prompt_files: Path, tiny_pair: dict[str, Any]
) -> None:
    """The tiny target's 64 tokens, in each shard, the dataset and its summary."""
    code, out = _run(tmp_path, "cnndm")
    assert code == 0
    summary = json.loads(out.with_suffix(".json").read_text())
    assert (summary["target"], summary["draft"]) == ("tiny-target", "tiny-draft")
    assert summary["target_vocab_size"] == 64
    assert WisvDataset.load(out).meta["target_vocab_size"] == 64
    shards = sorted(parts_folder(out).glob("prompt-*.npz"))
    assert [WisvDataset.load(s).meta["target_vocab_size"] for s in shards] == [64, 64]


def test_training_writes_the_captures_pair_into_the_head(tmp_path: Path) -> None:
    meta = {"target": "tiny-target", "draft": "tiny-draft", "target_vocab_size": 64}
    head = _train(tmp_path, meta)
    want = {"target": "tiny-target", "draft": "tiny-draft", "target_vocab_size": 64}
    assert head["trained_for"] == want
    loaded = load_head(tmp_path / "out" / "h-head.json")
    assert loaded.trained_for == TrainedFor("tiny-target", "tiny-draft", 64)


def test_captures_of_two_drafts_or_without_the_vocabulary(tmp_path: Path) -> None:
    """Two captures of one target with two drafts: the draft is null; one capture made
    before the vocabulary was recorded: the size is null."""
    a = {"target": "t", "draft": "d1", "target_vocab_size": 64}
    b = {"target": "t", "draft": "d2"}
    assert _train(tmp_path, a, b)["trained_for"] == {
        "target": "t",
        "draft": None,
        "target_vocab_size": None,
    }


def test_a_model_folder_is_recorded_as_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capture that named its target ``./target`` (a model folder here) records the
    folder's absolute path, to be found again from any folder."""
    folder = tmp_path / "target"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    pair = trained_pair({"target": "./target", "draft": "no-such-draft"})
    assert pair == TrainedFor(str(folder.resolve()), "no-such-draft", None)
    assert trained_pair({"draft": "d"}) is None  # no target recorded: no record


def test_a_head_file_without_the_record_loads(tmp_path: Path) -> None:
    """An older file (no ``trained_for``) loads with none, and is written back without."""
    path = tmp_path / "old.json"
    path.write_text(json.dumps(constant_head(-3.0).to_json()))
    head = load_head(path)
    assert head.trained_for is None and "trained_for" not in head.to_json()


def _with_pair(tmp_path: Path, pair: Any) -> Path:
    path = tmp_path / "head.json"
    path.write_text(json.dumps({**constant_head(-3.0).to_json(), "trained_for": pair}))
    return path


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("gemma3-270m", "trained_for must be a JSON object, got str"),
        ({"draft": "d"}, "trained_for is missing 'target'"),
        ({"target": ""}, "trained_for.target must be a model name, got ''"),
        ({"target": "t", "draft": 3}, "trained_for.draft must be a model name or null, got 3"),
        (
            {"target": "t", "target_vocab_size": 0},
            "trained_for.target_vocab_size must be an integer >= 1 or null, got 0",
        ),
    ],
)
def test_a_malformed_record_is_named(tmp_path: Path, pair: Any, message: str) -> None:
    path = _with_pair(tmp_path, pair)
    with pytest.raises(ValueError) as caught:
        load_head(path)
    assert str(caught.value) == f"{path} is not a decision head: {message}"


def test_the_record_round_trips(tmp_path: Path) -> None:
    pair = {"target": "/models/t", "draft": "gemma3-270m-draft", "target_vocab_size": 262144}
    head = load_head(_with_pair(tmp_path, pair))
    assert head.trained_for == TrainedFor("/models/t", "gemma3-270m-draft", 262144)
    assert head.to_json()["trained_for"] == pair
    again = DecisionHead.from_json(json.loads(json.dumps(head.to_json())))
    assert again.trained_for == head.trained_for
    np.testing.assert_array_equal(again.w1, head.w1)
