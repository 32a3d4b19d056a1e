"""A `train feature-draft --features-dir` records whose features it holds (the target) and
of which folders' shards (feature_settings.json, before the first features file): a rerun
with the same resumes, a `--data-dir` of a new name adds itself, and another target, or
another folder of a name already recorded, is refused in one line naming them before any
model loads. Without the record the old features were trained on as the new target's, or
another folder's shard_00000.pt took the features of the first one's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.learn.drafts import feature_train
from edgespec.learn.drafts.shard_manifest import ShardSettings, record_settings
from edgespec.models import loading
from edgespec.models.registry import resolve_model
from tests.learn.drafts.test_feature_train import _shards, _Tok
from tests.models.tiny import tiny_target

RECORD = "feature_settings.json"
OTHER = (
    "edgespec train feature-draft: "
    "--features-dir '{folder}' holds features made with other settings "
    "({differ}): give a new --features-dir, or the settings it was made with\n"
)


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("a model was loaded although --features-dir was refused")


def _record_shards(folder: Path, target: Path, vocab_size: int = 48) -> None:
    """The record `train draft` writes before its first shard, of ``_shards``' shards."""
    settings = ShardSettings(
        str(target.resolve()), vocab_size, 32, ("toy",), None, 4, 8, 16, 2, 0, 0.0
    )
    record_settings(folder, settings)


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny target saved (its config.json read before it loads), loaded from memory
    with a word tokenizer; its generated shards, and their record, in tmp_path/gen."""
    model = tiny_target()
    _shards(tmp_path / "gen", model)
    directory = tmp_path / "target"
    model.save_pretrained(directory)
    _record_shards(tmp_path / "gen", directory)
    real = loading.load_model

    def load(name: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(str(name)).parent == tmp_path:  # the target, or a copy of it
            return loading.LoadedModel(resolve_model(str(name)), model, _Tok())
        return real(name, *args, **kwargs)

    monkeypatch.setattr(loading, "load_model", load)
    return directory


def _run(target: Path, tmp_path: Path, *data_dirs: Path, extra: tuple[str, ...] = ()) -> int:
    argv = ["train", "feature-draft", "--target", str(target), "--out", str(tmp_path / "fd")]
    for data in data_dirs or (tmp_path / "gen",):
        argv += ["--data-dir", str(data)]
    argv += ["--features-dir", str(tmp_path / "f"), "--kept-tokens", "20", "--epochs", "1"]
    argv += ["--overwrite", *extra]  # a rerun replaces the draft; its features resume
    return main([*argv, "--heads", "2", "--head-dim", "8", "--intermediate-size", "16"])


def _features(tmp_path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((tmp_path / "f").glob("features_*.pt"))}


def test_the_record_is_written_before_the_first_features_and_the_same_run_resumes(
    target: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    features = feature_train.target_features

    def recorded_first(*args: Any, **kwargs: Any) -> Any:
        seen.append((tmp_path / "f" / RECORD).is_file())
        return features(*args, **kwargs)

    monkeypatch.setattr(feature_train, "target_features", recorded_first)
    assert _run(target, tmp_path) == 0
    assert seen and all(seen)
    assert json.loads((tmp_path / "f" / RECORD).read_text()) == {
        "edgespec_feature_settings": 1,
        "target": str(target.resolve()),
        "target_vocab_size": 48,
        "target_hidden_size": 32,
        "data_dirs": {"gen": str((tmp_path / "gen").resolve())},
    }
    done = _features(tmp_path)
    seen.clear()
    capsys.readouterr()
    assert _run(target, tmp_path) == 0
    assert seen == [] and _features(tmp_path) == done  # resumed: nothing to compute
    assert "warning" not in capsys.readouterr().err


def test_another_target_or_another_folder_of_a_recorded_name_is_refused_before_any_load(
    target: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were featurized beside (or trained on as) the old target's features, or took the
    first gen/'s features as their own (the same file names)."""
    assert _run(target, tmp_path) == 0
    done = _features(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(target, copy)
    other = tmp_path / "elsewhere" / "gen"
    shutil.copytree(tmp_path / "gen", other)
    monkeypatch.setattr(loading, "load_model", _never)
    capsys.readouterr()
    assert _run(copy, tmp_path) == 2
    differ = f"--target '{target.resolve()}' there, '{copy.resolve()}' now"
    assert capsys.readouterr().err == OTHER.format(folder=tmp_path / "f", differ=differ)
    assert _run(target, tmp_path, other) == 2
    differ = f"--data-dir named 'gen' '{(tmp_path / 'gen').resolve()}' there, "
    differ += f"'{other.resolve()}' now"
    assert capsys.readouterr().err == OTHER.format(folder=tmp_path / "f", differ=differ)
    assert _features(tmp_path) == done


def test_two_data_dirs_of_one_name_are_refused_before_any_load(
    target: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Their shard_00000.pt files had one features file between them."""
    other = tmp_path / "elsewhere" / "gen"
    shutil.copytree(tmp_path / "gen", other)
    monkeypatch.setattr(loading, "load_model", _never)
    assert _run(target, tmp_path, tmp_path / "gen", other) == 2
    assert capsys.readouterr().err == (
        "edgespec train feature-draft: "
        f"--data-dir '{(tmp_path / 'gen').resolve()}' and '{other.resolve()}' "
        "share the name 'gen': "
        "their features would share files in --features-dir; give folders of different names\n"
    )
    assert not (tmp_path / "f").exists()


def test_a_data_dir_of_a_new_name_adds_itself_to_the_record(
    target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _run(target, tmp_path) == 0
    done = _features(tmp_path)
    more = tmp_path / "more"
    shutil.copytree(tmp_path / "gen", more)
    assert _run(target, tmp_path, tmp_path / "gen", more) == 0
    assert json.loads((tmp_path / "f" / RECORD).read_text())["data_dirs"] == {
        "gen": str((tmp_path / "gen").resolve()),
        "more": str(more.resolve()),
    }
    now = _features(tmp_path)
    assert {k: now[k] for k in done} == done and len(now) == 2 * len(done)


def test_features_without_a_record_are_used_with_a_warning(
    target: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Made before this change: their target is unknown, said in one line."""
    assert _run(target, tmp_path) == 0
    (tmp_path / "f" / RECORD).unlink()
    capsys.readouterr()
    assert _run(target, tmp_path) == 0
    assert capsys.readouterr().err.startswith(
        f"warning: --features-dir '{tmp_path / 'f'}' holds features but no {RECORD} (made "
        "before edgespec recorded it): their target and shards are unknown, so they are used "
        "as they are\n"
    )
    assert not (tmp_path / "f" / RECORD).exists()


SHARDS_OTHER = (
    "edgespec train feature-draft: "
    "--data-dir '{folder}' holds shards made with other settings ({differ}): "
    "give a new --data-dir, or the settings it was made with\n"
)


def test_data_dir_shards_of_another_target_are_refused_before_any_load(
    target: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were featurized by this target although their token ids are another's."""
    monkeypatch.setattr(loading, "load_model", _never)
    elsewhere = tmp_path / "elsewhere"
    runs = [
        (elsewhere, 48, f"--target '{elsewhere}' there, '{target.resolve()}' now"),
        (target, 50, "the target's vocabulary size 50 there, 48 now"),
    ]
    for recorded, vocab_size, differ in runs:
        _record_shards(tmp_path / "gen", recorded, vocab_size)
        assert _run(target, tmp_path) == 2
        shown = SHARDS_OTHER.format(folder=tmp_path / "gen", differ=differ)
        assert capsys.readouterr().err == shown
    assert not (tmp_path / "f").exists()


def test_text_shards_are_checked_for_their_tokenizers_target_only(
    target: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`train text-shards` loads no weights, so its record names the target, no sizes:
    the same target trains on them, another is refused before any model loads."""
    from tests.learn.drafts.test_text_shards import _command
    from tests.models.tiny import tiny_draft

    load = loading.load_model
    assert _command(monkeypatch, target, tmp_path / "text", "--max-tokens", "64") == 0
    monkeypatch.setattr(loading, "load_model", load)
    tiny_draft(list(range(3, 48))).save(tmp_path / "draft")
    text = ("--data-dir", str(tmp_path / "text"), "--kept-from", str(tmp_path / "draft"))
    argv = ["train", "feature-draft", *text, "--epochs", "1", "--heads", "2", "--head-dim", "8"]
    argv += ["--intermediate-size", "16", "--out", str(tmp_path / "fd")]
    capsys.readouterr()
    assert main([*argv, "--target", str(target), "--features-dir", str(tmp_path / "f")]) == 0
    assert "warning" not in capsys.readouterr().err
    copy = tmp_path / "copy"
    shutil.copytree(target, copy)
    monkeypatch.setattr(loading, "load_model", _never)
    argv += ["--target", str(copy), "--out", str(tmp_path / "fd2")]  # fd holds a draft now
    assert main([*argv, "--features-dir", str(tmp_path / "f2")]) == 2
    differ = f"--target '{target.resolve()}' there, '{copy.resolve()}' now"
    shown = SHARDS_OTHER.format(folder=tmp_path / "text", differ=differ)
    assert capsys.readouterr().err == shown
    assert not (tmp_path / "f2").exists()


def _run_out(target: Path, tmp_path: Path, out: Path) -> int:
    """A run with ``--out`` ``out``, the data in tmp_path/gen, the features in tmp_path/f."""
    argv = ["train", "feature-draft", "--target", str(target), "--out", str(out)]
    return main([*argv, "--data-dir", str(tmp_path / "gen"), "--features-dir", str(tmp_path / "f")])


@pytest.mark.parametrize("flag", ["--data-dir", "--features-dir"])
def test_out_is_neither_a_data_dir_nor_the_features_dir(
    target: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
) -> None:
    """Was taken: the feature draft was saved among the shards (or the features) after the
    whole run, leaving a folder no later run writes into."""
    monkeypatch.setattr(loading, "load_model", _never)
    out = tmp_path / ("gen" if flag == "--data-dir" else "f")
    out.mkdir(exist_ok=True)
    assert _run_out(target, tmp_path, out) == 2
    assert capsys.readouterr().err == (
        "edgespec train feature-draft: "
        f"--out '{out}' is also the {flag}: a draft is saved into a folder "
        "of its own, not among shards; give another --out\n"
    )
    assert _features(tmp_path) == {}


def test_out_holds_no_features(
    target: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loading, "load_model", _never)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "features_00000.pt").write_bytes(b"")
    assert _run_out(target, tmp_path, tmp_path / "old") == 2
    assert capsys.readouterr().err == (
        "edgespec train feature-draft: "
        f"--out '{tmp_path / 'old'}' holds shards (features_00000.pt): a "
        "draft is saved into a folder of its own, not among shards; give another --out\n"
    )


def test_a_holdout_of_every_prompt_is_refused_before_a_draft_is_saved(
    target: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It trained 0 steps and saved the new draft's random weights, exit 0."""
    assert _run(target, tmp_path, extra=("--holdout", "0.999")) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("edgespec train feature-draft: --holdout 0.999 holds out every "
                          "prompt of the featurized data ("), err  # fmt: skip
    assert err.endswith("leaving none to train on (at least one prompt is held out): give "
                        "more prompts or a smaller --holdout"), err  # fmt: skip
    assert not (tmp_path / "fd").exists()
