"""Settings of `edgespec train draft` (and `train feature-draft`) that used to fail only
after the target had loaded and generated (up to --gen-minutes) or featurized: each is
refused in one line naming the flags, before the target loads or, for a target whose
config.json tells no sizes, before generation starts."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from edgespec.cli import main
from edgespec.learn.drafts import distill_data, draft_checks
from edgespec.learn.drafts.distill import DraftArchitecture, init_draft
from edgespec.models import loading
from tests.models.tiny import SPECIAL, tiny_target

KNOWN = "known datasets are gsm8k, cnndm, humaneval, sharegpt"
WIDER = (
    "--hidden-size {hidden} is larger than min(--kept-tokens {kept}, the target's hidden size "
    "32) = {limit}: a new draft's embeddings are the target's projected on at most that many "
    "directions"
)


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("reached after a setting that could only fail later")


def _draft_args(target: Path, tmp_path: Path) -> list[str]:
    folders = ["--data-dir", str(tmp_path / "d"), "--out", str(tmp_path / "o")]
    return ["train", "draft", "--target", str(target), "--threads", "1", *folders]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        # a ValueError traceback from datasets/prompts.py after the target loaded
        (["--datasets", "nosuch"], f"--datasets: no dataset named 'nosuch'; {KNOWN}"),
        (["--datasets", "gsm8k,general"],
         f"--datasets: 'general' is held out from training (a test split only); {KNOWN}"),
        # nothing generated, then "no distillation shards" blamed on the data dir
        (["--datasets", ",,"], f"--datasets ',,' names no dataset; {KNOWN}"),
        (["--datasets", "gsm8k, gsm8k"], "--datasets names 'gsm8k' twice"),
        # the trimmed config's StrictDataclassClassValidationError, after generation
        (["--hidden-size", "30"], "--hidden-size 30 is not a multiple of --heads 4 (each "
         "head takes hidden-size / heads dimensions)"),
        # a RuntimeError in the rotary embedding at the first training step
        (["--hidden-size", "12"], "--hidden-size 12 / --heads 4 = 3 dimensions per head: it "
         "must be even (rotary position embeddings turn pairs)"),
        # init_draft's tensor size RuntimeError, after generation
        ([], WIDER.format(hidden=256, kept=8192, limit=32)),
        (["--hidden-size", "64", "--kept-tokens", "40"],
         WIDER.format(hidden=64, kept=40, limit=32)),
        (["--hidden-size", "16", "--heads", "2", "--kept-tokens", "8"],
         WIDER.format(hidden=16, kept=8, limit=8)),
        # encode_prompt's ValueError, label_texts' after generation
        (["--max-prompt-tokens", "1"], "--max-prompt-tokens must be >= 2 (BOS + one), got 1"),
        (["--text-data-dir", "t", "--text-max-tokens", "2"],
         "--text-max-tokens must be >= 3, got 2"),
    ],
)  # fmt: skip
def test_train_draft_refuses_late_failing_settings_before_the_target_loads(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    message: str,
) -> None:
    monkeypatch.setattr(loading, "load_model", _never)
    assert main([*_draft_args(target_dir, tmp_path), *flags]) == 2
    assert capsys.readouterr().err == f"edgespec train draft: {message}\n"
    assert not (tmp_path / "d").exists()


def test_a_target_without_readable_sizes_is_checked_once_loaded_before_generation(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A .gguf target has no config.json to read its hidden size from: the loaded model's
    is checked, before any prompt is generated (init_draft crashed after generation)."""
    monkeypatch.setattr(draft_checks, "saved_target_shape", lambda target: None)
    monkeypatch.setattr(distill_data, "generate_distillation_data", _never)
    flags = ["--hidden-size", "64", "--kept-tokens", "40"]
    assert main([*_draft_args(target_dir, tmp_path), *flags]) == 2
    message = WIDER.format(hidden=64, kept=40, limit=32)
    assert capsys.readouterr().err == f"edgespec train draft: {message}\n"
    assert not (tmp_path / "d").exists()


def test_a_new_draft_wider_than_its_kept_tokens_starts_with_zero_columns() -> None:
    """Fewer kept tokens in the data than --kept-tokens (8 here, under hidden size 16) was
    init_draft's RuntimeError after generation; the columns past them now start at zero."""
    embeddings = tiny_target().get_input_embeddings().weight.detach()
    arch = DraftArchitecture(8192, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32)
    kept = [0, 1, 2, 5, 9, 11, 30, 40]
    draft = init_draft(embeddings, kept, arch, SPECIAL, "tiny")
    weight = draft.model.embed_tokens.weight.detach()
    assert weight.shape == (len(kept) + 1, 16)
    assert torch.equal(weight[:, len(kept) :], torch.zeros(len(kept) + 1, 16 - len(kept)))
    assert float(weight[: len(kept), :7].std()) > 0.01  # 8 centred rows: 7 directions
    logits, _ = draft.trimmed_forward(torch.tensor([[2, 5, 9, 11]]), use_cache=False)
    assert logits.shape == (1, 4, len(kept)) and bool(torch.isfinite(logits).all())


def test_train_feature_draft_refuses_an_odd_head_dim_before_the_target_loads(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Was the feature draft config's ValueError traceback after every shard was featurized
    (up to --feature-minutes)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "shard_00000.pt").touch()  # never read: the flag is refused first
    monkeypatch.setattr(loading, "load_model", _never)
    args = ["train", "feature-draft", "--target", str(target_dir), "--head-dim", "7"]
    args += ["--data-dir", str(tmp_path / "d"), "--features-dir", str(tmp_path / "f")]
    assert main([*args, "--out", str(tmp_path / "o"), "--threads", "1"]) == 2
    message = "--head-dim must be even (rotary position embeddings turn pairs), got 7"
    assert capsys.readouterr().err == f"edgespec train feature-draft: {message}\n"
    assert not (tmp_path / "f").exists()
