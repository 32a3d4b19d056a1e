"""`edgespec train draft` and `train feature-draft` stopped by Ctrl-C in training resume it
at the step they stopped at (the rerun said so; both restarted training from step 0),
``train draft``'s draft then equal, tensor for tensor, to that of a run never stopped; the
checkpoint is gone once the draft is saved. A checkpoint of other flags is refused before
the target loads, naming the flag; a damaged one naming the file; ``--overwrite`` and other
training data discard it in a line."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from safetensors.torch import load_file

from edgespec.cli import main
from edgespec.learn.drafts import draft_progress
from edgespec.learn.drafts.checkpoint import CHECKPOINT_NAME
from edgespec.models import loading
from edgespec.models.feature_draft import load_feature_draft
from edgespec.models.registry import resolve_model
from tests.learn.drafts.test_draft_output import _never
from tests.learn.drafts.test_feature_train import _shards, _Tok
from tests.learn.drafts.test_shard_manifest import _args
from tests.models.tiny import tiny_target

FLAGS = ("--epochs", "3", "--tokens-per-step", "16")  # 4 batches an epoch, 12 steps


def _steps(patched: pytest.MonkeyPatch, name: str, stop_at: int | None = None) -> list[int]:
    """The steps training reports through ``draft_progress.<name>`` (its bar's callback),
    Ctrl-C raised after step ``stop_at``."""
    seen: list[int] = []
    real: Callable[..., Callable[..., None]] = getattr(draft_progress, name)

    def callback(console: Any, update: Any, budget_s: float | None) -> Callable[..., None]:
        inner = real(console, update, budget_s)

        def step_done(step: int, *rest: Any) -> None:
            inner(step, *rest)
            seen.append(step)
            if step == stop_at:
                raise KeyboardInterrupt

        return step_done

    patched.setattr(draft_progress, name, callback)
    return seen


def _draft(out: Path, monkeypatch: pytest.MonkeyPatch, *flags: str, **kw: Any) -> list[int]:
    """Run `train draft` (the tiny target, shards in ``data``) into ``out``; its steps."""
    target: Path = kw.pop("target")
    status = kw.pop("status", 0)
    with monkeypatch.context() as patched:
        seen = _steps(patched, "on_step", **kw)
        assert main(_args(target, Path("data"), out, *FLAGS, *flags)) == status
    return seen


def _same_tensors(a: Path, b: Path) -> None:
    left, right = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert left.keys() == right.keys()
    for name, tensor in left.items():
        assert tensor.equal(right[name]), name


@pytest.fixture
def stopped(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    prompts: None,
) -> list[int]:
    """A whole run into ``whole``, then one into ``out`` stopped by Ctrl-C after step 5 (in
    the second epoch);
    the whole run's steps."""
    monkeypatch.chdir(tmp_path)
    whole = _draft(Path("whole"), monkeypatch, target=target_dir)
    assert whole == list(range(1, 13))
    capsys.readouterr()
    assert _draft(Path("out"), monkeypatch, target=target_dir, stop_at=5, status=130) == [
        1,
        2,
        3,
        4,
        5,
    ]
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-2:] == [
        f"training stopped; its checkpoint of step 5 is in {Path('out', CHECKPOINT_NAME)}: the "
        "same command resumes it",
        "edgespec train draft: interrupted",
    ]
    assert [p.name for p in Path("out").iterdir()] == [CHECKPOINT_NAME]  # no draft yet
    return whole


def test_train_draft_resumes_at_its_step_and_saves_the_draft_of_a_run_never_stopped(
    stopped: list[int],
    target_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _draft(Path("out"), monkeypatch, target=target_dir) == list(range(6, 13))
    said = capsys.readouterr().err
    assert re.search(
        r"^resuming training at step 5/12 \(checkpoint of [-\d]+ [:\d]+\)$", said, re.M
    )
    assert not Path("out", CHECKPOINT_NAME).exists()
    _same_tensors(Path("whole"), Path("out"))
    assert _draft(Path("out"), monkeypatch, target=target_dir, status=2) == []  # finished


def test_train_draft_refuses_a_checkpoint_of_other_flags_before_the_target_loads(
    stopped: list[int],
    target_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loading, "load_model", _never)
    assert main(_args(target_dir, Path("data"), Path("out"), *FLAGS, "--lr", "1e-3")) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"edgespec train draft: --out out holds a training checkpoint ({CHECKPOINT_NAME}) made "
        "with other settings (--lr 0.002 there, 0.001 now): rerun with those to "
        "resume it, or --overwrite discards it and trains from the start"
    )
    assert Path("out", CHECKPOINT_NAME).is_file()


def test_train_draft_refuses_a_damaged_checkpoint_naming_it(
    stopped: list[int],
    target_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = Path("out", CHECKPOINT_NAME)
    path.write_bytes(path.read_bytes()[:1000])
    monkeypatch.setattr(loading, "load_model", _never)
    assert main(_args(target_dir, Path("data"), Path("out"), *FLAGS)) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"edgespec train draft: {path}: not a readable training checkpoint (cut off or "
        "damaged); --overwrite discards it and trains from the start"
    )


@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (("--overwrite",), " (--overwrite):"),
        (
            ("--train-data-dir", "more"),  # a copy of the shards: other training data
            ": it was made on other training data (the data stages have added to it, or "
            "other folders were given);",
        ),
    ],
)
def test_train_draft_discards_the_checkpoint_with_overwrite_or_other_data(
    stopped: list[int],
    target_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: tuple[str, ...],
    why: str,
) -> None:
    shutil.copytree("data", "more")  # the same folder again is refused (trained twice)
    steps = _draft(Path("out"), monkeypatch, *flags, target=target_dir)
    assert steps[:6] == [1, 2, 3, 4, 5, 6]  # from the start
    assert (
        f"discarded the training checkpoint {Path('out', CHECKPOINT_NAME)}{why} training "
        "starts at step 0"
    ) in capsys.readouterr().err
    assert not Path("out", CHECKPOINT_NAME).exists()
    if flags == ("--overwrite",):
        _same_tensors(Path("whole"), Path("out"))


def _feature_argv(tmp_path: Path, *flags: str) -> list[str]:
    argv = ["train", "feature-draft", "--target", str(tmp_path / "target"), "--out"]
    argv += [str(tmp_path / "fd"), "--data-dir", str(tmp_path / "gen"), "--features-dir"]
    argv += [str(tmp_path / "f"), "--kept-tokens", "20", "--epochs", "3", "--heads", "2"]
    return [*argv, "--head-dim", "8", "--intermediate-size", "16", "--batch-size", "4", *flags]


def test_train_feature_draft_resumes_at_its_step_and_refuses_other_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tiny_target()
    _shards(tmp_path / "gen", model)
    model.save_pretrained(tmp_path / "target")

    def load(name: Any, *args: Any, **kwargs: Any) -> Any:
        return loading.LoadedModel(resolve_model(str(name)), model, _Tok())

    monkeypatch.setattr(loading, "load_model", load)
    with monkeypatch.context() as patched:
        assert _steps(patched, "on_feature_step", stop_at=4) == []
        assert main(_feature_argv(tmp_path)) == 130
    checkpoint = tmp_path / "fd" / CHECKPOINT_NAME
    assert [p.name for p in checkpoint.parent.iterdir()] == [CHECKPOINT_NAME]
    capsys.readouterr()
    monkeypatch.setattr(loading, "load_model", _never)
    assert main(_feature_argv(tmp_path, "--lr", "1e-3")) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"edgespec train feature-draft: --out {tmp_path / 'fd'} holds a training checkpoint "
        f"({CHECKPOINT_NAME}) made with other settings (--lr 0.0005 there, 0.001 "
        "now): rerun with those to resume it, or --overwrite discards it and trains from the "
        "start"
    )
    monkeypatch.setattr(loading, "load_model", load)
    with monkeypatch.context() as patched:
        resumed = _steps(patched, "on_feature_step")
        assert main(_feature_argv(tmp_path)) == 0
    assert resumed == [5, 6, 7, 8, 9]  # 11 training sequences in 3 batches, 3 epochs
    assert "resuming training at step 4/9 (checkpoint of " in capsys.readouterr().err
    assert not checkpoint.exists()
    assert len(load_feature_draft(tmp_path / "fd", model).config.draft_token_ids) >= 20
