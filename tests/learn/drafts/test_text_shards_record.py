"""`edgespec train text-shards --out` records whose tokenizer and which texts its shards
hold (shard_settings.json, before the first shard): a rerun with the same rewrites the same
shards, one with another target or other limits is refused in one line naming them before
the tokenizer loads, and `train feature-draft` refuses the folder for another target.
Without the record a rerun overwrote some of the shards and left the rest, mixing two
tokenizers' or two limits' sequences unnoticed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from edgespec.learn.drafts import text_shards
from tests.learn.drafts.test_shard_manifest import OTHER
from tests.learn.drafts.test_text_shards import _command

SETTINGS = "shard_settings.json"


def _shards(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("shard_*.pt"))}


def test_the_settings_are_recorded_before_the_first_shard_and_the_same_ones_rerun(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target_dir: Path,
) -> None:
    out = tmp_path / "s"
    seen: list[bool] = []
    write = text_shards.write_text_shards

    def recorded_first(*args: Any, **kwargs: Any) -> tuple[int, int]:
        seen.append((out / SETTINGS).is_file())
        return write(*args, **kwargs)

    monkeypatch.setattr(text_shards, "write_text_shards", recorded_first)
    assert _command(monkeypatch, target_dir, out, "--max-tokens", "64") == 0
    assert seen == [True]
    assert json.loads((out / SETTINGS).read_text()) == {
        "edgespec_shard_settings": 1,
        "target": str(target_dir.resolve()),
        "task_datasets": ["gsm8k", "cnndm", "humaneval"],
        "conversations": 2000,
        "max_tokens": 64,
        "prompt_tokens": 32,
        "min_output_tokens": 9,
        "sequences_per_shard": 64,
    }
    shards = _shards(out)
    capsys.readouterr()
    assert _command(monkeypatch, target_dir, out, "--max-tokens", "64") == 0
    assert _shards(out) == shards and capsys.readouterr().err == ""


def test_another_target_or_other_limits_are_refused_before_the_tokenizer_loads(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target_dir: Path,
) -> None:
    """Were written over the first shards, the others left: two runs' sequences mixed."""
    out = tmp_path / "s"
    assert _command(monkeypatch, target_dir, out, "--max-tokens", "64") == 0
    shards = _shards(out)
    copy = tmp_path / "copy"
    shutil.copytree(target_dir, copy)
    capsys.readouterr()
    runs = [
        (target_dir, ["--max-tokens", "50", "--conversations", "5"],
         "--conversations 2000 there, 5 now; --max-tokens 64 there, 50 now"),
        (copy, ["--max-tokens", "64"],
         f"--target '{target_dir.resolve()}' there, '{copy.resolve()}' now"),
    ]  # fmt: skip
    for target, flags, differ in runs:
        assert _command(monkeypatch, target, out, *flags, loads=False) == 2
        assert capsys.readouterr().err == OTHER.format(
            command="text-shards", flag="--out", folder=out, differ=differ
        )
    assert _shards(out) == shards


def test_shards_without_a_record_are_written_over_with_a_warning(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target_dir: Path,
) -> None:
    """Written before this change: their settings are unknown, and what the run does with
    them, said in one line (it said they were "used as they are", as read shards are)."""
    out = tmp_path / "s"
    assert _command(monkeypatch, target_dir, out) == 0
    (out / SETTINGS).unlink()
    first = (out / "shard_00000.pt").read_bytes()
    (out / "shard_00000.pt").write_bytes(b"old")
    (out / "shard_00009.pt").write_bytes(b"old")
    capsys.readouterr()
    assert _command(monkeypatch, target_dir, out) == 0
    assert capsys.readouterr().err == (
        f"warning: --out '{out}' holds shards but no shard_settings.json (made before "
        "edgespec recorded it): their target and settings are unknown, and this run writes "
        "its shards over those of the same numbers, leaving any others as they are\n"
    )
    assert (out / "shard_00000.pt").read_bytes() == first  # written over
    assert (out / "shard_00009.pt").read_bytes() == b"old"  # left
    assert not (out / SETTINGS).exists()
