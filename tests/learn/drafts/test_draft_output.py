"""What `edgespec train draft` says and where it saves: the ``--fast-head`` help cites the
recorded speed (it said 0.69-0.72x, the results file 0.66), the save is as quiet as the
loads without ``--verbose`` (transformers' "Writing model shards" bar was shown), the size
printed is the draft's files' (it counted the whole ``--out``, shards and all: 1.5 MB for a
6.6 kB draft), and ``--out`` is never one of the run's shard folders, nor one holding
shards (the draft was saved among them, leaving a folder no later run writes shards into)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from edgespec.cli import build_parser, main
from edgespec.models import loading
from tests.learn.drafts.test_shard_manifest import _args, _trained

ROOT = Path(__file__).resolve().parents[3]
RESULTS = "benchmarks/results/distill-speed-gemma3-270m.json"
APART = "a draft is saved into a folder of its own, not among shards; give another --out"


def _never(*args: object, **kwargs: object) -> None:
    raise AssertionError("the target was loaded although --out was refused")


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = subs.choices[name]
    return found


def test_the_fast_head_help_cites_the_recorded_speed() -> None:
    draft = _subparser(_subparser(build_parser(), "train"), "draft")
    action = next(a for a in draft._actions if "--fast-head" in a.option_strings)
    ratio = json.loads((ROOT / RESULTS).read_text())["results"]["time_ratio"]
    assert action.help is not None and action.help.endswith(
        f"({ratio:.2f}x the time of transformers' generate on one CPU thread: {RESULTS}, "
        "docs/LEARN.md)"
    )
    assert f"{ratio:.2f}× the time" in (ROOT / "docs" / "LEARN.md").read_text()


@pytest.mark.usefixtures("prompts")
def test_the_save_is_quiet_and_the_size_is_the_drafts(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # short paths: the console wraps long lines
    Path("out").mkdir()
    Path("out", "notes.bin").write_bytes(bytes(2_000_000))  # not the draft's
    assert main(_args(target_dir, Path("data"), Path("out"))) == 0
    err = capsys.readouterr().err
    draft = sum(p.stat().st_size for p in Path("out").iterdir() if p.name != "notes.bin")
    assert 1_000 < draft < 20_000
    assert f"saved draft to out ({draft / 1e3:.1f} kB)\n" in err
    assert "Writing model shards" not in err
    args = _trained(target_dir, Path("data"), Path("out2"), "--skip-generate", "--verbose")
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "Writing model shards" in err and f"saved draft to out2 ({draft / 1e3:.1f} kB)" in err


@pytest.mark.parametrize("flag", ["--data-dir", "--text-data-dir", "--train-data-dir"])
def test_out_is_not_a_shard_folder_of_the_run(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
) -> None:
    """Was taken: `--skip-generate --data-dir D --out D` saved the draft among the shards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(loading, "load_model", _never)
    Path("shards").mkdir()
    shards = tmp_path / "shards"  # the same folder, spelled otherwise
    args = _trained(target_dir, shards if flag == "--data-dir" else Path("data"), Path("shards"))
    if flag != "--data-dir":
        args += [flag, str(shards)]
    args.append("--skip-generate")
    assert main(args) == 2
    assert capsys.readouterr().err == (
        f"edgespec train draft: --out 'shards' is also the {flag}: {APART}\n"
    )
    assert list(Path("shards").iterdir()) == []


def test_out_holds_no_shards(
    target_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(loading, "load_model", _never)
    Path("old").mkdir()
    Path("old", "shard_00001.pt").write_bytes(b"")
    Path("old", "shard_00000.pt").write_bytes(b"")
    assert main(_args(target_dir, Path("data"), Path("old"))) == 2
    assert capsys.readouterr().err == (
        f"edgespec train draft: --out 'old' holds shards (shard_00000.pt): {APART}\n"
    )
    assert sorted(p.name for p in Path("old").iterdir()) == ["shard_00000.pt", "shard_00001.pt"]
