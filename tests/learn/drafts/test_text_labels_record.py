"""A `--text-data-dir` records what its teacher-forced shards were labelled with (the
target, the texts, their length, the draft's kept tokens; shard_settings.json, before the
first shard): a rerun with the same resumes, one with others is refused in one line naming
them, before the target loads (or, for a new draft's kept tokens, chosen only after
generation, before any text is labelled). Without the record a rerun added its shards to
the old ones, or trained on them, unnoticed."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.learn.drafts import distill_text
from edgespec.models import loading
from tests.learn.drafts.test_shard_manifest import OTHER, _args
from tests.models.tiny import VOCAB, tiny_draft

SETTINGS = "shard_settings.json"
KEPT = list(range(3, VOCAB))


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("the expensive stage ran although the text data dir was refused")


@pytest.fixture
def conversations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four ShareGPT training conversations in the tiny tokenizer's words."""
    rows = [
        {"id": f"c{i}", "conversations": [{"from": "human", "value": f"w{10 + i} w11 w12"},
                                          {"from": "gpt", "value": f"w13 w{14 + i} w15"}]}
        for i in range(4)
    ]  # fmt: skip
    monkeypatch.setattr(distill_text, "sharegpt_rows", lambda: iter(rows))
    monkeypatch.setattr(distill_text, "sharegpt_split", lambda conversation_id: "train")


def _text_args(target: Path, tmp_path: Path, out: str, *flags: str) -> list[str]:
    """`train draft` on the tiny target, labelling texts into tmp_path/text."""
    text = ["--text-data-dir", str(tmp_path / "text"), "--text-max-tokens", "6"]
    return _args(target, tmp_path / "data", tmp_path / out, *text, *flags)


def _digest(kept: list[int]) -> str:
    return hashlib.sha256(json.dumps(sorted(kept)).encode()).hexdigest()


def _shards(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("shard_*.pt"))}


@pytest.mark.usefixtures("prompts", "conversations")
def test_the_text_settings_are_recorded_before_the_first_shard_and_the_same_ones_resume(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tiny_draft(KEPT).save(tmp_path / "draft")
    text = tmp_path / "text"
    seen: list[bool] = []
    label = distill_text.label_batch

    def recorded_first(*args: Any, **kwargs: Any) -> dict[str, list[Any]]:
        seen.append((text / SETTINGS).is_file())
        return label(*args, **kwargs)

    monkeypatch.setattr(distill_text, "label_batch", recorded_first)
    flags = ("--init-from", str(tmp_path / "draft"), "--conversations", "3")
    assert main(_text_args(target_dir, tmp_path, "out", *flags)) == 0
    assert seen == [True]  # 5 prompts and 3 conversations: one batch of 8
    assert json.loads((text / SETTINGS).read_text()) == {
        "edgespec_shard_settings": 1,
        "target": str(target_dir.resolve()),
        "target_vocab_size": 48,
        "target_hidden_size": 32,
        "text_datasets": ["gsm8k"],
        "conversations": 3,
        "max_tokens": 6,
        "label_batch_size": 8,
        "top_k": 16,
        "kept_tokens_sha256": _digest(KEPT),
    }
    shards = _shards(text)
    capsys.readouterr()
    seen.clear()
    assert main(_text_args(target_dir, tmp_path, "out2", *flags)) == 0  # resumed: nothing new
    assert seen == [] and _shards(text) == shards
    assert "warning" not in capsys.readouterr().err


@pytest.mark.usefixtures("prompts", "conversations")
def test_other_texts_another_target_or_other_kept_tokens_are_refused_before_the_target_loads(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were labelled into the folder beside the old shards (or trained on with them), after
    the target loaded."""
    tiny_draft(KEPT).save(tmp_path / "draft")
    tiny_draft(KEPT[:-1]).save(tmp_path / "draft2")
    start = ("--init-from", str(tmp_path / "draft"))
    assert main(_text_args(target_dir, tmp_path, "out", *start, "--conversations", "3")) == 0
    text = tmp_path / "text"
    shards = _shards(text)
    other_target = tmp_path / "copy"
    shutil.copytree(target_dir, other_target)
    monkeypatch.setattr(loading, "load_model", _never)
    capsys.readouterr()
    runs = [
        (target_dir, [*start, "--conversations", "4", "--text-max-tokens", "7"],
         "--conversations 3 there, 4 now; --text-max-tokens 6 there, 7 now"),
        (target_dir, [*start, "--conversations", "3", "--datasets", "gsm8k,cnndm"],
         "--datasets (all but sharegpt) gsm8k there, gsm8k,cnndm now"),
        (target_dir, ["--init-from", str(tmp_path / "draft2"), "--conversations", "3"],
         f"the draft's kept tokens (SHA-256) '{_digest(KEPT)}' there, "
         f"'{_digest(KEPT[:-1])}' now"),
        (other_target, [*start, "--conversations", "3"],
         f"--target '{target_dir.resolve()}' there, '{other_target.resolve()}' now"),
    ]  # fmt: skip
    for target, flags, differ in runs:
        data = ("--data-dir", str(tmp_path / "new-data"))  # the old one's would refuse first
        assert main(_text_args(target, tmp_path, "o", *flags, *data)) == 2
        shown = OTHER.format(command="draft", flag="--text-data-dir", folder=text, differ=differ)
        assert capsys.readouterr().err == shown
    assert _shards(text) == shards
    assert not (tmp_path / "o").exists()


@pytest.mark.usefixtures("prompts", "conversations")
def test_a_new_drafts_other_kept_tokens_are_refused_before_any_text_is_labelled(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new draft chooses its kept tokens from the generated shards: a run choosing others
    (here fewer) would label among them into the folder of the first run's, after its
    generation (resumed here: nothing to generate)."""
    longer = ("--max-new-tokens", "16")  # more tokens in the continuations than 17
    assert main(_text_args(target_dir, tmp_path, "out", *longer, "--kept-tokens", "30")) == 0
    text = tmp_path / "text"
    first = json.loads((text / SETTINGS).read_text())["kept_tokens_sha256"]
    shards = _shards(text)
    fewer = (*longer, "--kept-tokens", "17", "--text-data-dir", str(tmp_path / "text2"))
    assert main(_text_args(target_dir, tmp_path, "out2", *fewer)) == 0  # a new folder: labelled
    now = json.loads((tmp_path / "text2" / SETTINGS).read_text())["kept_tokens_sha256"]
    assert now != first
    monkeypatch.setattr(distill_text, "label_batch", _never)
    capsys.readouterr()
    assert main(_text_args(target_dir, tmp_path, "o", *longer, "--kept-tokens", "17")) == 2
    differ = f"the draft's kept tokens (SHA-256) '{first}' there, '{now}' now"
    shown = OTHER.format(command="draft", flag="--text-data-dir", folder=text, differ=differ)
    assert capsys.readouterr().err.endswith("\n" + shown)  # after the (resumed) stages' bars
    assert _shards(text) == shards
    assert not (tmp_path / "o").exists()


@pytest.mark.usefixtures("prompts", "conversations")
def test_text_shards_without_a_record_are_used_with_a_warning(
    target_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Labelled before this change: their settings are unknown, said in one line."""
    tiny_draft(KEPT).save(tmp_path / "draft")
    flags = ("--init-from", str(tmp_path / "draft"))
    assert main(_text_args(target_dir, tmp_path, "out", *flags)) == 0
    (tmp_path / "text" / SETTINGS).unlink()
    capsys.readouterr()
    assert main(_text_args(target_dir, tmp_path, "out2", *flags)) == 0
    warning = (
        f"warning: --text-data-dir '{tmp_path / 'text'}' holds shards but no "
        "shard_settings.json (made before edgespec recorded it): their target and settings "
        "are unknown, so they are used as they are\n"
    )
    assert capsys.readouterr().err.startswith(warning)
    assert not (tmp_path / "text" / SETTINGS).exists()


@pytest.mark.usefixtures("prompts", "conversations")
@pytest.mark.parametrize("draft", ["new", "init-from"])
def test_fewer_than_16_kept_tokens_are_all_labels_and_train_beside_the_generated_top_16(
    target_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], draft: str
) -> None:
    """Crashed after generation with "RuntimeError: selected index k out of range": the
    top-16 was taken among 8 kept tokens. Each sequence's labels are read at their own
    width, so the 8-wide text labels train beside the generated shards' 16-wide ones."""
    from edgespec.learn.drafts.samples import load_shards

    kept = ("--kept-tokens", "8")
    if draft == "init-from":
        tiny_draft(KEPT[:8]).save(tmp_path / "draft")
        kept = ("--init-from", str(tmp_path / "draft"))
    flags = (*kept, "--conversations", "3", "--max-new-tokens", "4")
    assert main(_text_args(target_dir, tmp_path, "out", *flags)) == 0
    text = tmp_path / "text"
    assert json.loads((text / SETTINGS).read_text())["top_k"] == 8
    assert {s.topk_ids.shape[1] for s in load_shards(text)} == {8}
    assert {s.topk_ids.shape[1] for s in load_shards(tmp_path / "data")} == {16}
    shards = _shards(text)
    capsys.readouterr()
    assert main(_text_args(target_dir, tmp_path, "out2", *flags)) == 0  # resumed
    assert _shards(text) == shards and "warning" not in capsys.readouterr().err
