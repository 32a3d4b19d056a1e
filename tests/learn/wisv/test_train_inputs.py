"""`edgespec train wisv`'s inputs: ``--dropout`` outside [0, 1) is a usage error naming
the flag (was "dropout must be in [0, 1)", after the data was read); a ``--data`` file
given twice, however named, is refused (its mismatches counted twice), and so are files
captured with different targets (one hidden size mixed them in silence)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from edgespec.cli import build_parser, main
from tests.learn.wisv.test_train import synthetic

DROPOUT = "must be in [0, 1) (the probability of dropping a hidden unit in training), got"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("1", f"{DROPOUT} 1"),
        ("1.5", f"{DROPOUT} 1.5"),
        ("-0.1", "must be >= 0, got -0.1"),
        ("nan", "must be a finite number, got 'nan'"),
    ],
)
def test_a_dropout_outside_zero_one_names_the_flag(
    capsys: pytest.CaptureFixture[str], given: str, message: str
) -> None:
    base = ["train", "wisv", "--data", "d", "--out-dir", "o", "--dropout"]
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args([*base, given])
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: argument --dropout: {message}\n")
    assert build_parser().parse_args([*base, "0"]).dropout == 0.0
    assert build_parser().parse_args([*base, "0.3"]).dropout == 0.3


def _train(tmp_path: Path, *data: Path) -> int:
    given = [arg for path in data for arg in ("--data", str(path))]
    return main(["train", "wisv", *given, "--out-dir", str(tmp_path / "o"), "--epochs", "1"])


def test_a_data_file_given_twice_is_refused_however_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was joined twice: its prompts held out beside their own copies, counted twice."""
    path = tmp_path / "d.npz"
    synthetic().save(path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.npz").symlink_to(path)
    advice = "give each file once (its mismatches would count twice)"
    assert _train(tmp_path, path, path) == 2
    assert capsys.readouterr().err == f"edgespec train wisv: --data {path}: given twice; {advice}\n"
    for again in (tmp_path / "sub" / ".." / "d.npz", tmp_path / "link.npz"):
        assert _train(tmp_path, path, again) == 2
        assert capsys.readouterr().err == (
            f"edgespec train wisv: --data {again}: the same file as --data {path}; {advice}\n"
        )
    copy = tmp_path / "copy.npz"
    copy.write_bytes(path.read_bytes())  # was joined: its mismatches counted twice
    assert _train(tmp_path, path, copy) == 2
    assert capsys.readouterr().err == (
        f"edgespec train wisv: --data {copy}: a copy of --data {path}; {advice}\n"
    )
    assert not (tmp_path / "o").exists()


def test_files_of_different_targets_are_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two targets of one hidden size were mixed into one head, named after the first."""
    paths = [tmp_path / f"{name}.npz" for name in ("a", "b", "c", "d")]
    metas = [{"target": "tiny"}, {"target": "tiny"}, {"target": "other"}, {}]
    for k, (path, meta) in enumerate(zip(paths, metas, strict=True)):
        dataclasses.replace(synthetic(prompts=8, seed=k), meta=meta).save(path)
    assert _train(tmp_path, *paths[:3]) == 2
    assert capsys.readouterr().err == (
        "edgespec train wisv: "
        f"--data {paths[0]} and --data {paths[2]} were captured with different "
        "targets ('tiny' and 'other'); a head is trained for one target: give files of one\n"
    )
    assert _train(tmp_path, paths[0], paths[3]) == 2
    assert "different targets ('tiny' and none recorded)" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    assert _train(tmp_path, *paths[:2]) == 0  # one target: trained
