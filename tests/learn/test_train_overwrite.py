"""`edgespec train stop-predictor`, `awc` and `wisv` refuse an output that already holds
an earlier run's artifact unless ``--overwrite`` (as `trace`, `profile`, `calibrate` and
`reproduce` do), in one line naming the flag, the file or folder and what it holds, when
the flags are parsed: before any traces, data or model are read. Each wrote over the
earlier file silently. The drafts' commands: tests/learn/drafts/test_overwrite.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.errors import UserInputError
from tests.learn.wisv.test_train import synthetic


def _err(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The last line of stderr of ``edgespec argv``, which must exit 2."""
    assert main(argv) == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # short, relative paths in the messages
    return tmp_path


@pytest.mark.usefixtures("here")
def test_stop_predictor_refuses_an_earlier_predictor_and_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("p.json").write_text("{}\n")
    argv = ["train", "stop-predictor", "--traces", "missing.jsonl", "--out", "p.json"]
    assert _err(argv, capsys) == (
        "edgespec train stop-predictor: --out p.json already exists; give another --out, "
        "or --overwrite to replace it with the stop predictor"
    )
    assert "--traces missing.jsonl: no such file" in _err([*argv, "--overwrite"], capsys)
    Path("r").mkdir()
    Path("r", "REPORT.md").write_text("# earlier\n")
    argv = ["train", "stop-predictor", "--traces", "missing.jsonl", "--out", "new.json"]
    assert _err([*argv, "--report-dir", "r"], capsys) == (
        "edgespec train stop-predictor: --report-dir r already holds a stop-predictor report "
        "(REPORT.md); give another --report-dir, or --overwrite to replace its files"
    )
    Path("empty.json").touch()  # an empty file holds nothing to lose, as trace's --out
    argv = ["train", "stop-predictor", "--traces", "missing.jsonl", "--out", "empty.json"]
    assert "--traces missing.jsonl: no such file" in _err(argv, capsys)


@pytest.mark.usefixtures("here")
def test_awc_refuses_earlier_weights(capsys: pytest.CaptureFixture[str]) -> None:
    Path("w.json").write_text("{}\n")
    argv = ["train", "awc", "--data", "missing", "--out", "w.json"]
    assert _err(argv, capsys) == (
        "edgespec train awc: --out w.json already exists; give another --out, or --overwrite "
        "to replace it with the WC-DNN's weights"
    )
    assert "missing" in _err([*argv, "--overwrite"], capsys)
    assert Path("w.json").read_text() == "{}\n"


def test_wisv_refuses_a_head_of_the_same_name(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("out").mkdir()
    Path("out", "h-metrics.json").write_text("{}\n")
    argv = ["train", "wisv", "--data", "missing.npz", "--out-dir", "out", "--name", "h"]
    assert _err(argv, capsys) == (
        "edgespec train wisv: --out-dir out already holds a head named h (h-metrics.json); "
        "give another --out-dir, another --name, or --overwrite to replace its files"
    )
    assert "--data missing.npz: no such file" in _err([*argv, "--overwrite"], capsys)
    # another budget's files have another name: not this head's
    assert "no such file" in _err([*argv, "--budget", "kappa-critical"], capsys)


def test_wisv_without_name_checks_the_targets_head_before_training(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    meta = {"target": "tiny-target", "draft": "tiny-draft"}
    dataclasses.replace(synthetic(), meta=meta).save(here / "d.npz")
    Path("out").mkdir()
    Path("out", "tiny-target-head.json").write_text("{}\n")
    argv = ["train", "wisv", "--data", "d.npz", "--out-dir", "out", "--epochs", "1"]
    assert _err([*argv, "--width", "4"], capsys) == (
        "edgespec train wisv: --out-dir out already holds a head named tiny-target "
        "(tiny-target-head.json); give another --out-dir, another --name, or --overwrite to "
        "replace its files"
    )
    assert Path("out", "tiny-target-head.json").read_text() == "{}\n"
    assert main([*argv, "--width", "4", "--overwrite"]) == 0
    assert "w1" in json.loads(Path("out", "tiny-target-head.json").read_text())


def test_an_overwritten_models_files_are_removed_and_no_other(tmp_path: Path) -> None:
    """``--overwrite`` of a draft: the earlier model's files (another kind's marker
    included, which the loader would read first) go right before the save; others stay."""
    from edgespec.learn.finished import DRAFT, check_replaceable, remove_earlier

    for name in ("feature_draft.json", "model.safetensors", "config.json", "notes.txt"):
        (tmp_path / name).write_text("x")
    check_replaceable("--out", tmp_path, DRAFT, overwrite=True)  # only checked
    assert len(list(tmp_path.iterdir())) == 4
    removed = remove_earlier(tmp_path, DRAFT)
    assert [p.name for p in removed] == ["config.json", "feature_draft.json", "model.safetensors"]
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_folder_where_a_draft_file_goes_is_refused_even_with_overwrite(
    tmp_path: Path,
) -> None:
    from edgespec.learn.finished import DRAFT, check_replaceable

    (tmp_path / "config.json").mkdir()
    with pytest.raises(UserInputError, match="is a folder where this run writes a file"):
        check_replaceable("--out", tmp_path, DRAFT, overwrite=True)
