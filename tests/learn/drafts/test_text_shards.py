"""`edgespec train text-shards`: token shards of text, readable by train feature-draft."""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch

from edgespec.learn.drafts import feature_train as ft
from edgespec.learn.drafts import text_shards
from tests.models.tiny import tiny_target


class _Tok:
    bos_token_id = 2

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": [int(t) for t in text.split()]}


def _texts(count: int) -> list[str]:
    # lengths 20..99 tokens of ids 3..47 (the tiny target's vocabulary is 48)
    return [" ".join(str(3 + (i + j) % 45) for j in range(20 + i % 80)) for i in range(count)]


def test_shards_split_prompt_and_output_and_feed_feature_training(tmp_path: Path) -> None:
    texts = _texts(160)
    count, tokens = text_shards.write_text_shards(_Tok(), texts, tmp_path / "s", max_tokens=64)
    kept = [t for t in texts if len(t.split()) + 1 >= 41]  # BOS + at least 40 tokens
    assert count == len(kept) and count < len(texts)
    shards = sorted((tmp_path / "s").glob("shard_*.pt"))
    assert [p.name for p in shards] == ["shard_00000.pt", "shard_00001.pt"]
    data = torch.load(shards[0], weights_only=True)
    assert len(data["prompt_ids"]) == 64
    first = [int(t) for t in kept[0].split()]
    assert data["prompt_ids"][0].tolist() == [2, *first[:31]]
    assert data["output_ids"][0].tolist() == first[31:63]  # 64 tokens in all, BOS included
    assert tokens == sum(min(64, len(t.split()) + 1) for t in kept)
    done = ft.featurize_shards(tiny_target(), shards, tmp_path / "f")
    sequences = ft.load_feature_files(done)
    assert len(sequences) == count and sequences[0].prompt_len == 32


def _command(
    monkeypatch: pytest.MonkeyPatch, target: Path, out: Path, *flags: str, loads: bool = True
) -> int:
    """`train text-shards` of 80 texts with the word tokenizer as ``target``'s (``loads``
    False: loading it, or reading the texts, fails the test); never the weights."""
    from edgespec.cli import main
    from edgespec.models import loading

    def load(name: Any, *args: Any, **kwargs: Any) -> Any:
        assert loads, "the tokenizer was loaded although --out was refused"
        assert name == str(target)
        return _Tok()

    def texts(conversations: int) -> list[str]:
        assert loads, "the texts were read although --out was refused"
        return _texts(80)

    def no_weights(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("text-shards needs the tokenizer only")

    monkeypatch.setattr(loading, "load_tokenizer", load)
    monkeypatch.setattr(loading, "load_model", no_weights)
    monkeypatch.setattr(text_shards, "training_texts", texts)
    return main(["train", "text-shards", "--target", str(target), "--out", str(out), *flags])


def test_command_writes_shards(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target_dir: Path,
) -> None:
    assert _command(monkeypatch, target_dir, tmp_path / "s") == 0
    assert "sequences" in capsys.readouterr().out
    assert len(list((tmp_path / "s").glob("shard_*.pt"))) == 1


def test_command_refuses_a_cut_off_draft_as_its_target_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was "--target '...' has no tokenizer": the registry's refusal of the cut-off save."""
    from edgespec.cli import main
    from tests.learn.traces.test_checks import cut_off_draft

    draft = cut_off_draft(tmp_path / "cut")
    capsys.readouterr()  # the library's progress bar of the save
    assert main(["train", "text-shards", "--target", str(draft), "--out", str(tmp_path / "s")]) == 2
    assert capsys.readouterr().err == (
        f"edgespec train text-shards: model directory '{draft}' holds a trimmed draft without its "
        "trimmed_vocab.json: its save was cut off before it finished; save or train the draft "
        "again\n"
    )
    assert not (tmp_path / "s").exists()


def test_command_refuses_too_few_tokens_saying_why(capsys: pytest.CaptureFixture[str]) -> None:
    """The least --max-tokens follows from the prompt and output lengths (it said only
    ">= 41", whatever they were), and is refused as the flags are parsed."""
    from edgespec.cli import main

    least = text_shards.PROMPT_TOKENS + text_shards.MIN_OUTPUT_TOKENS
    with pytest.raises(SystemExit) as stop:
        main(["train", "text-shards", "--out", "unused", "--max-tokens", str(least - 1)])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"edgespec train text-shards: error: argument --max-tokens: must be >= {least} (a "
        f"text's first {text_shards.PROMPT_TOKENS} tokens are its prompt, and one with fewer "
        f"than {text_shards.MIN_OUTPUT_TOKENS} after them is left out), got {least - 1}"
    )


def test_command_refuses_more_tokens_than_the_targets_context(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target_dir: Path,
) -> None:
    """Was unbounded: texts longer than the target's context were written as they were.
    The tiny target's config.json gives 256 positions; refused before the tokenizer
    loads."""
    out = tmp_path / "s"
    assert _command(monkeypatch, target_dir, out, "--max-tokens", "257", loads=False) == 2
    assert capsys.readouterr().err.strip() == (
        f"edgespec train text-shards: --max-tokens must be <= 256, the context length of "
        f"--target {target_dir} (its config.json's max_position_embeddings), got 257"
    )
    assert not out.exists()
    assert _command(monkeypatch, target_dir, out, "--max-tokens", "256") == 0


def test_without_a_config_the_bound_is_the_stated_constant(tmp_path: Path) -> None:
    """A target whose config.json is not to be read (a .gguf file) is bounded by
    MAX_TEXT_TOKENS."""
    from edgespec.errors import UserInputError

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    limit = text_shards.MAX_TEXT_TOKENS
    text_shards.check_max_tokens(limit, str(gguf))
    with pytest.raises(UserInputError, match=f"--max-tokens must be <= {limit:,} "):
        text_shards.check_max_tokens(limit + 1, str(gguf))


def _interrupted_on_second_shard(monkeypatch: pytest.MonkeyPatch) -> None:
    """``torch.save`` writes the second shard's first half, then the run is stopped."""
    save = torch.save
    calls: list[int] = []

    def half_then_stop(obj: Any, f: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) < 2:
            save(obj, f, *args, **kwargs)
            return
        buffer = io.BytesIO()
        save(obj, buffer)
        data = buffer.getvalue()[: len(buffer.getvalue()) // 2]
        if isinstance(f, (str, Path)):
            Path(f).write_bytes(data)
        else:
            f.write(data)
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", half_then_stop)


def test_a_run_stopped_mid_shard_leaves_no_part_of_that_shard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _interrupted_on_second_shard(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        text_shards.write_text_shards(_Tok(), _texts(160), tmp_path / "s", max_tokens=64)
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["shard_00000.pt"]
    assert len(torch.load(tmp_path / "s" / "shard_00000.pt", weights_only=True)["prompt_ids"]) == 64


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd")
def test_a_disk_that_fills_mid_shard_names_the_shard_and_leaves_none_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.disk_full import disk_full_writing

    out = tmp_path / "s"
    disk_full_writing(monkeypatch, "shard_00001.pt")
    with pytest.raises(OSError, match="No space left on device") as caught:
        text_shards.write_text_shards(_Tok(), _texts(160), out, max_tokens=64)
    assert caught.value.filename == str(out / "shard_00001.pt")
    assert [p.name for p in out.iterdir()] == ["shard_00000.pt"]


def test_temporaries_of_a_killed_run_are_removed_by_the_next(tmp_path: Path) -> None:
    """Were left for good (the distillation shards' were removed): a dead writer's
    temporary goes, a live one's (its shard in the making) stays."""
    out = tmp_path / "s"
    out.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    live = os.getppid()
    (out / f".shard_00001.pt.{gone.pid}.tmp").write_bytes(b"a run killed outright")
    (out / f".shard_00003.pt.{live}.tmp").write_bytes(b"in the making")
    text_shards.write_text_shards(_Tok(), _texts(160), out, max_tokens=64)
    assert sorted(p.name for p in out.iterdir()) == [
        f".shard_00003.pt.{live}.tmp",
        "shard_00000.pt",
        "shard_00001.pt",
    ]


def test_feature_draft_chooses_its_kept_tokens_from_text_shards(tmp_path: Path) -> None:
    """Without --kept-from, feature-draft read its --data-dir as distillation shards and
    refused a text-shards folder after the target loaded: "shard_00000.pt: not a shard
    (missing topk_ids, topk_logits)"."""
    import argparse
    from types import SimpleNamespace

    from edgespec.learn.drafts.feature_command import _kept_tokens

    text_shards.write_text_shards(_Tok(), _texts(40), tmp_path / "s", max_tokens=64)
    weights: dict[int, int] = {}  # an output token counts 4x a prompt token
    for shard in (tmp_path / "s").glob("shard_*.pt"):
        data = torch.load(shard, weights_only=True)
        for prompt, output in zip(data["prompt_ids"], data["output_ids"], strict=True):
            for token, weight in [(t, 1) for t in prompt.tolist()] + [
                (t, 4) for t in output.tolist()
            ]:
                weights[token] = weights.get(token, 0) + weight
    ranked = sorted((t for t in weights if t != 2), key=lambda t: (-weights[t], t))
    args = argparse.Namespace(data_dir=[tmp_path / "s"], kept_tokens=4)
    target = SimpleNamespace(tokenizer=_Tok())  # its BOS (2) is always kept
    assert _kept_tokens(args, target) == [2, *ranked[:3]]
