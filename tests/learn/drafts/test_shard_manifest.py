"""A `--data-dir` records the target and settings its shards were generated with
(shard_settings.json, before the first shard): a rerun with the same ones resumes, one with
another target or other settings is refused in one line naming them, before the target
loads (the shards used to be mixed silently), and shards made before the record existed
are used with a warning."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from edgespec.cli import main
from edgespec.learn.drafts import distill_data
from edgespec.learn.drafts.shard_manifest import (
    MANIFEST_NAME,
    ShardSettings,
    record_settings,
)
from edgespec.models import loading
from tests.models.tiny import VOCAB, tiny_draft

SETTINGS = "shard_settings.json"
OTHER = (
    "edgespec train {command}: {flag} '{folder}' holds shards made with other settings ({differ}): "
    "give a new {flag}, or the settings it was made with\n"
)


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("the target was loaded although the data dir was refused")


def _args(target: Path, data: Path, out: Path, *flags: str) -> list[str]:
    """A whole `train draft` run on the tiny target: seconds."""
    return [*_trained(target, data, out), "--max-new-tokens", "3", "--batch-size", "2", *flags]


def _trained(target: Path, data: Path, out: Path, *flags: str) -> list[str]:
    """:func:`_args` without its generation flags (``--skip-generate`` refuses them)."""
    args = ["train", "draft", "--target", str(target), "--data-dir", str(data), "--out", str(out)]
    args += ["--datasets", "gsm8k"]
    args += ["--hidden-size", "8", "--heads", "2", "--layers", "1", "--intermediate-size", "16"]
    return [*args, "--epochs", "1", "--tokens-per-step", "64", "--threads", "1", *flags]


def _shards(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("shard_*.pt"))}


@pytest.mark.usefixtures("prompts")
def test_the_settings_are_recorded_before_the_first_shard_and_the_same_ones_resume(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No record was written: a shard held only token ids and logits."""
    data = tmp_path / "data"
    seen: list[bool] = []
    generate = distill_data.generate_batch

    def recorded_first(*args: Any, **kwargs: Any) -> dict[str, list[Any]]:
        seen.append((data / SETTINGS).is_file())
        return generate(*args, **kwargs)

    monkeypatch.setattr(distill_data, "generate_batch", recorded_first)
    assert main(_args(target_dir, data, tmp_path / "out")) == 0
    assert seen == [True, True, True]  # 5 prompts in batches of 2
    assert json.loads((data / SETTINGS).read_text()) == {
        "edgespec_shard_settings": 1,
        "target": str(target_dir.resolve()),
        "target_vocab_size": 48,
        "target_hidden_size": 32,
        "datasets": ["gsm8k"],
        "sharegpt_limit": None,
        "batch_size": 2,
        "max_prompt_tokens": 256,
        "max_new_tokens": 3,
        "top_k": 16,
        "seed": 0,
        "temperature": 0.0,
    }
    shards = _shards(data)
    assert len(shards) == 3
    capsys.readouterr()
    seen.clear()
    assert main(_args(target_dir, data, tmp_path / "out2")) == 0  # resumed: nothing to do
    assert seen == []
    assert _shards(data) == shards
    assert "warning" not in capsys.readouterr().err


@pytest.mark.usefixtures("prompts")
def test_other_settings_or_another_target_are_refused_before_the_target_loads(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were generated into the same folder after the old shards (or trained on as they
    were), after the target loaded."""
    data = tmp_path / "data"
    assert main(_args(target_dir, data, tmp_path / "out")) == 0
    shards = _shards(data)
    other_target = tmp_path / "copy"
    shutil.copytree(target_dir, other_target)
    monkeypatch.setattr(loading, "load_model", _never)
    capsys.readouterr()
    flags = ("--max-new-tokens", "4", "--seed", "1", "--datasets", "gsm8k,cnndm")
    assert main(_args(target_dir, data, tmp_path / "o", *flags)) == 2
    differ = "--datasets gsm8k there, gsm8k,cnndm now; --max-new-tokens 3 there, 4 now; "
    differ += "--seed 0 there, 1 now"
    shown = OTHER.format(command="draft", flag="--data-dir", folder=data, differ=differ)
    assert capsys.readouterr().err == shown
    for run in (_args(other_target, data, tmp_path / "o"),
                _trained(other_target, data, tmp_path / "o", "--skip-generate")):  # fmt: skip
        assert main(run) == 2
        differ = f"--target '{target_dir.resolve()}' there, '{other_target.resolve()}' now"
        shown = OTHER.format(command="draft", flag="--data-dir", folder=data, differ=differ)
        assert capsys.readouterr().err == shown
    assert _shards(data) == shards
    assert not (tmp_path / "o").exists()


@pytest.mark.usefixtures("prompts")
def test_skip_generate_trains_on_shards_of_other_generation_settings(
    target_dir: Path, tmp_path: Path
) -> None:
    """Nothing is added to them: only their target must be the run's (the shards were
    generated with 3 new tokens in batches of 2, the flags' defaults are 96 and 32)."""
    data = tmp_path / "data"
    assert main(_args(target_dir, data, tmp_path / "out")) == 0
    shards = _shards(data)
    assert main(_trained(target_dir, data, tmp_path / "out2", "--skip-generate")) == 0
    assert (tmp_path / "out2" / "config.json").is_file()
    assert _shards(data) == shards


@pytest.mark.usefixtures("prompts")
def test_a_fast_head_run_finishes_a_folder_begun_without_one(
    target_dir: Path, tmp_path: Path
) -> None:
    """docs/LEARN.md's second command: the same batches, the rest generated faster."""
    data = tmp_path / "data"
    assert main(_args(target_dir, data, tmp_path / "out")) == 0
    (data / "shard_00002.pt").unlink()
    tiny_draft(list(range(3, VOCAB))).save(tmp_path / "draft")
    flags = ("--init-from", str(tmp_path / "draft"), "--fast-head")
    assert main(_args(target_dir, data, tmp_path / "out2", *flags)) == 0
    assert sorted(_shards(data)) == [f"shard_0000{i}.pt" for i in range(3)]


@pytest.mark.usefixtures("prompts")
def test_a_fast_head_of_fewer_than_16_tokens_labels_all_of_them_and_records_that_width(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Crashed at the first batch (top-16 of an 8-row head), after the target loaded. Every
    label's width is recorded, so a run without the cut head (top-16) is refused first."""
    data = tmp_path / "data"
    tiny_draft(list(range(3, 11))).save(tmp_path / "draft")  # K = 8
    flags = ("--init-from", str(tmp_path / "draft"), "--fast-head")
    assert main(_args(target_dir, data, tmp_path / "out", *flags)) == 0
    assert json.loads((data / SETTINGS).read_text())["top_k"] == 8
    for shard in sorted(data.glob("shard_*.pt")):
        for ids in torch.load(shard, weights_only=True)["topk_ids"]:
            assert ids.shape[1] == 8 and set(ids.flatten().tolist()) <= set(range(3, 11))
    monkeypatch.setattr(loading, "load_model", _never)
    capsys.readouterr()
    (data / "shard_00002.pt").unlink()
    assert main(_args(target_dir, data, tmp_path / "out2")) == 2
    differ = "the labels per position (top-k) 8 there, 16 now"
    assert capsys.readouterr().err == OTHER.format(
        command="draft", flag="--data-dir", folder=data, differ=differ
    )


@pytest.mark.usefixtures("prompts")
def test_train_data_dir_shards_of_another_target_are_refused(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data, extra = tmp_path / "data", tmp_path / "extra"
    assert main(_args(target_dir, data, tmp_path / "out")) == 0
    shutil.copytree(data, extra)
    other = ShardSettings("gemma3-270m", 48, 640, ("cnndm",), None, 32, 256, 96, 16, 0, 0.7)
    record_settings(extra, other)  # its generation settings are its own: not compared
    monkeypatch.setattr(loading, "load_model", _never)
    capsys.readouterr()
    assert main(_args(target_dir, data, tmp_path / "o", "--train-data-dir", str(extra))) == 2
    differ = f"--target 'gemma3-270m' there, '{target_dir.resolve()}' now; "
    differ += "the target's hidden size 640 there, 32 now"
    assert capsys.readouterr().err == OTHER.format(
        command="draft", flag="--train-data-dir", folder=extra, differ=differ
    )


@pytest.mark.usefixtures("prompts")
def test_shards_without_a_record_are_used_with_a_warning(
    target_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Made before this change: their settings are unknown, said in one line."""
    data = tmp_path / "data"
    assert main(_args(target_dir, data, tmp_path / "out")) == 0
    (data / MANIFEST_NAME).unlink()
    capsys.readouterr()
    assert main(_args(target_dir, data, tmp_path / "out2")) == 0
    warning = (
        f"warning: --data-dir '{data}' holds shards but no shard_settings.json (made before "
        "edgespec recorded it): their target and settings are unknown, so they are used as "
        "they are\n"
    )
    assert capsys.readouterr().err.startswith(warning)
    assert not (data / MANIFEST_NAME).exists()  # nothing claimed about shards not made here


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"target": ', "not valid JSON: Expecting value"),
        (b"\xff\xfe", "not UTF-8 text"),
        (b'["edgespec_shard_settings"]', "not a JSON object"),
        (b'{"target": "gemma3-270m"}', "no 'edgespec_shard_settings' key"),
        (b" " * 70_000, "over 65,536 bytes"),
    ],
)
def test_a_record_that_is_not_one_is_named(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    content: bytes,
    problem: str,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "shard_00000.pt").touch()  # never read: the record is refused first
    (data / MANIFEST_NAME).write_bytes(content)
    monkeypatch.setattr(loading, "load_model", _never)
    assert main(_args(target_dir, data, tmp_path / "o")) == 2
    shown = f"{data / MANIFEST_NAME}: not a settings file ({problem})"
    assert capsys.readouterr().err == f"edgespec train draft: {shown}\n"
