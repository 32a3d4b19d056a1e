"""`edgespec train draft` and `train feature-draft` refuse an ``--out`` that already holds
a draft (or any model's files) unless ``--overwrite``, in one line naming the folder,
what it holds and ``--overwrite``, before the target loads: both saved over an earlier
draft silently. The shard and features folders keep resuming (a rerun continues them),
and ``--overwrite`` leaves none of the earlier save behind (another kind's marker, which
the model loader reads first, included)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.models import loading
from edgespec.models.registry import ModelSource, resolve_model
from tests.learn.drafts.test_draft_output import _never
from tests.learn.drafts.test_feature_train import _shards, _Tok
from tests.learn.drafts.test_shard_manifest import _args
from tests.models.tiny import tiny_target


@pytest.mark.usefixtures("prompts")
def test_train_draft_refuses_an_earlier_draft_and_overwrite_replaces_it(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(_args(target_dir, Path("data"), Path("out"))) == 0
    shards = {p.name: p.read_bytes() for p in Path("data").glob("shard_*.pt")}
    capsys.readouterr()
    with monkeypatch.context() as patched:
        patched.setattr(loading, "load_model", _never)
        assert main(_args(target_dir, Path("data"), Path("out"))) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "edgespec train draft: --out out already holds a trimmed draft (config.json, "
        "generation_config.json, model.safetensors, trimmed_vocab.json); give another --out, "
        "or --overwrite to replace its files"
    )
    assert main(_args(target_dir, Path("data"), Path("out2"))) == 0  # the shards resume
    assert {p.name: p.read_bytes() for p in Path("data").glob("shard_*.pt")} == shards
    Path("out", "feature_draft.json").write_text("{}")  # another kind's marker: read first
    Path("out", "notes.txt").write_text("mine")
    assert main(_args(target_dir, Path("data"), Path("out"), "--overwrite")) == 0
    assert not Path("out", "feature_draft.json").exists()
    assert Path("out", "notes.txt").read_text() == "mine"
    assert resolve_model("out").source is ModelSource.HF_DIRECTORY  # a trimmed draft again
    assert Path("out", "trimmed_vocab.json").is_file()


def _feature_argv(tmp_path: Path, *flags: str) -> list[str]:
    argv = ["train", "feature-draft", "--target", str(tmp_path / "target"), "--out"]
    argv += [str(tmp_path / "fd"), "--data-dir", str(tmp_path / "gen"), "--features-dir"]
    argv += [str(tmp_path / "f"), "--kept-tokens", "20", "--epochs", "1", "--heads", "2"]
    return [*argv, "--head-dim", "8", "--intermediate-size", "16", *flags]


def test_train_feature_draft_refuses_an_earlier_model_and_overwrite_replaces_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tiny_target()
    _shards(tmp_path / "gen", model)
    model.save_pretrained(tmp_path / "target")
    fd = tmp_path / "fd"
    fd.mkdir()
    for name in ("config.json", "model.safetensors", "trimmed_vocab.json"):
        (fd / name).write_text("{}")  # a trimmed draft's files, as a loader reads them
    monkeypatch.setattr(loading, "load_model", _never)
    assert main(_feature_argv(tmp_path)) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"edgespec train feature-draft: --out {fd} already holds a trimmed draft "
        "(config.json, model.safetensors, trimmed_vocab.json); give another --out, or "
        "--overwrite to replace its files"
    )

    def load(name: Any, *args: Any, **kwargs: Any) -> Any:
        return loading.LoadedModel(resolve_model(str(name)), model, _Tok())

    monkeypatch.setattr(loading, "load_model", load)
    assert main(_feature_argv(tmp_path, "--overwrite")) == 0
    assert sorted(p.name for p in fd.iterdir()) == ["feature_draft.json", "model.safetensors"]
    features = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "f").iterdir()}
    assert main(_feature_argv(tmp_path, "--overwrite")) == 0  # the features resume
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "f").iterdir()} == features
