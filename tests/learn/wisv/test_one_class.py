"""`edgespec train wisv` with one class, and its files' strict JSON: training prompts whose
mismatches are all critical (or none) are refused in one line; a split where an AUC is
undefined (one class held out) reports it as ``null``, never as ``NaN``; ``--validation``
outside [0, 1) is a usage error naming the flag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import edgespec.learn.wisv.fit as fit
from edgespec.cli import build_parser, main
from edgespec.learn.wisv.train import split_episodes
from edgespec.learn.wisv.union import union
from tests.learn.wisv.test_train import synthetic


def _strict(text: str) -> Any:
    """``text`` as strict JSON: ``NaN``, ``Infinity`` and ``-Infinity`` are refused."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not strict JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    ("critical", "problem"),
    [
        (1, "every mismatch among the training prompts is critical"),
        (0, "no critical mismatch among the training prompts"),
    ],
)
def test_training_prompts_of_one_class_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], critical: int, problem: str
) -> None:
    """All critical was trained, and wrote ``"auc_base": NaN`` into the head and metrics."""
    data = synthetic()
    data.rows["critical"][:] = critical
    path = tmp_path / "d.npz"
    data.save(path)
    out = tmp_path / "o"
    assert main(["train", "wisv", "--data", str(path), "--out-dir", str(out)]) == 2
    assert capsys.readouterr().err == f"edgespec train wisv: --data {path}: {problem}\n"
    assert not out.exists()


def test_an_auc_undefined_on_the_held_out_prompts_is_null(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Held-out prompts all critical: their AUC is undefined, written as null (was NaN)."""
    data = synthetic()
    _, held = split_episodes(data, 0.25, 0, union([data])[1])  # the command's split
    for _, rows, _ in held:
        data.rows["critical"][rows] = 1
    path = tmp_path / "d.npz"
    data.save(path)
    out = tmp_path / "o"
    command = ["train", "wisv", "--data", str(path), "--out-dir", str(out), "--epochs", "2"]
    assert main(command) == 0
    printed = _strict(capsys.readouterr().out)
    files = {k: _strict((out / f"tiny-{k}.json").read_text()) for k in ("head", "metrics")}
    _strict((out / "tiny-acceptance.json").read_text())
    for held_out in (
        printed["report"]["held_out"],
        files["metrics"]["report"]["held_out"],
        files["head"]["metadata"]["held_out"],
    ):
        assert held_out["auc_base"] is None and held_out["auc_relabelled"] is None
        assert held_out["base_critical_share"] == 1.0
    assert isinstance(files["metrics"]["report"]["train"]["auc_base"], float)


def test_a_nan_in_any_file_writes_none_of_them(tmp_path: Path) -> None:
    """The three files are serialised strictly before any is written."""
    out = tmp_path / "o"
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        fit._write(out, "x", {"w1": [[1.0]]}, {"mismatches": 3}, {"auc": float("nan")})
    assert not out.exists()
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        fit._write(out, "x", {"w1": [[1.0]]}, {"share": np.float64("inf")}, {})
    assert not out.exists()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("1", "must be in [0, 1) (a share of the training prompts; 0: none), got 1"),
        ("1.5", "must be in [0, 1) (a share of the training prompts; 0: none), got 1.5"),
        ("-0.2", "must be >= 0, got -0.2"),
        ("nan", "must be a finite number, got 'nan'"),
    ],
)
def test_validation_outside_zero_one_names_the_flag(
    capsys: pytest.CaptureFixture[str], given: str, message: str
) -> None:
    """Was "validation must be in [0, 1), got 1.0", after the data was read."""
    base = ["train", "wisv", "--data", "d", "--out-dir", "o", "--validation"]
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args([*base, given])
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(f"error: argument --validation: {message}\n")
    assert build_parser().parse_args([*base, "0"]).validation == 0.0
    assert build_parser().parse_args([*base, "0.2"]).validation == 0.2
