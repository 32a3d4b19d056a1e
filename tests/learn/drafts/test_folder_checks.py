"""The folders of `edgespec train draft` and `train feature-draft`, and those written
beside shards, checked when the flags are parsed or before any model loads: a file given
as a shard or features folder (was: `fd1.log: File exists` from a mkdir after the target
loaded), a `--features-dir` that is, or is inside, a `--data-dir` or holds shards (was:
features written among the shards), a `--data-dir` that is missing, a file or a saved
feature draft (was: "holds no shard_*.pt files" for all three), a `train awc-data --out`
of shards and a `train text-shards --out` of a wisv-data store (both were written into),
and a folder as `train wisv --data` (was: "no such file")."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` (the working folder) with a file ``fd1.log``, a shard folder ``sh``, a
    folder ``f2`` holding a shard, a saved feature draft ``fdr`` and a store ``w.parts``."""
    monkeypatch.chdir(tmp_path)
    for name in ("sh", "f2", "fdr", "w.parts"):
        (tmp_path / name).mkdir()
    for name in (
        "fd1.log",
        "sh/shard_settings.json",
        "sh/shard_00000.pt",
        "f2/shard_00001.pt",
        "fdr/feature_draft.json",
        "w.parts/run.json",
    ):
        (tmp_path / name).write_bytes(b"")
    return tmp_path


def _refusal(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The last line ``edgespec`` writes on stderr refusing ``argv`` (exit code 2, returned
    or, for a flag argparse refuses, raised)."""
    try:
        code: int | str | None = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


_FEATURES = ["train", "feature-draft", "--out", "x"]
_APART = "features are written into a folder of their own; give another --features-dir"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["train", "draft", "--out", "x", "--data-dir", "fd1.log"],
            "edgespec train draft: error: argument --data-dir: fd1.log is a file, not a folder",
        ),
        (
            ["train", "draft", "--out", "x", "--data-dir", "d", "--text-data-dir", "fd1.log"],
            "edgespec train draft: error: argument --text-data-dir: fd1.log is a file, not a "
            "folder",
        ),
        (
            [*_FEATURES, "--data-dir", "sh", "--features-dir", "fd1.log"],
            "edgespec train feature-draft: error: argument --features-dir: fd1.log is a file, "
            "not a folder",
        ),
        (
            [*_FEATURES, "--data-dir", "sh", "--features-dir", "sh"],
            f"edgespec train feature-draft: --features-dir 'sh' is the --data-dir 'sh': {_APART}",
        ),
        (
            [*_FEATURES, "--data-dir", "sh", "--features-dir", "sh/f"],
            "edgespec train feature-draft: --features-dir 'sh/f' is inside the --data-dir "
            f"'sh': {_APART}",
        ),
        (
            [*_FEATURES, "--data-dir", "sh", "--features-dir", "f2"],
            f"edgespec train feature-draft: --features-dir 'f2' holds shards (shard_00001.pt): "
            f"{_APART}",
        ),
        (  # was accepted: features written beside the draft
            [*_FEATURES, "--data-dir", "sh", "--features-dir", "fdr"],
            "edgespec train feature-draft: --features-dir 'fdr' holds a feature draft "
            "(feature_draft.json), not features: features are written into a folder of their "
            "own; give a new --features-dir",
        ),
        (
            [*_FEATURES, "--data-dir", "nosuch", "--features-dir", "f"],
            "edgespec train feature-draft: --data-dir 'nosuch': no such folder",
        ),
        (
            [*_FEATURES, "--data-dir", "fd1.log", "--features-dir", "f"],
            "edgespec train feature-draft: --data-dir 'fd1.log' is a file, not a folder",
        ),
        (
            [*_FEATURES, "--data-dir", "fdr", "--features-dir", "f"],
            "edgespec train feature-draft: --data-dir 'fdr' holds a feature draft "
            "(feature_draft.json), not shards: shards are written into a folder of their own; "
            "give a new --data-dir",
        ),
        (
            ["train", "text-shards", "--out", "w.parts"],
            "edgespec train text-shards: --out 'w.parts' holds a `train wisv-data` or `train "
            "awc-data` run (run.json), not shards: shards are written into a folder of their "
            "own; give a new --out",
        ),
        (
            ["train", "wisv", "--data", "fdr", "--out-dir", "o"],
            "edgespec train wisv: --data fdr: a folder, not a file (give a wisv-data .npz)",
        ),
    ],
)
def test_a_folder_of_the_wrong_kind_is_refused_in_one_line(
    folders: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _refusal(argv, capsys) == message
    assert not (folders / "x").exists() and not (folders / "f").exists()
    assert sorted(p.name for p in (folders / "sh").iterdir()) == [
        "shard_00000.pt",
        "shard_settings.json",
    ]


def test_awc_data_refuses_a_shard_folder_as_its_out(
    folders: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyarrow")
    argv = ["train", "awc-data", "--out", "sh", "--workers", "1", "--scenarios", "1"]
    assert _refusal(argv, capsys) == (
        "edgespec train awc-data: --out 'sh' holds shards (shard_00000.pt, read by `train "
        "draft` and `train feature-draft`), not an awc-data run: give a new --out"
    )
    assert sorted(p.name for p in (folders / "sh").iterdir()) == [
        "shard_00000.pt",
        "shard_settings.json",
    ]
