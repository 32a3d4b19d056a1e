"""``edgespec train stop-predictor`` off a terminal logs one line per step: the dataset,
each search trial and each predictor's held-out point (was: nothing until ``wrote``, for
the minute and a half the default study takes; the status line shows only on a
terminal); the closing ``wrote`` line is one line however long the path (was: wrapped at
80 columns)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.learn.stop.command import BUNDLED_TRACES


def test_each_trial_and_predictor_is_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (BUNDLED_TRACES / "gemma3-270m-draft-train.jsonl").read_text().splitlines()
    traces = tmp_path / "t.jsonl"
    traces.write_text("\n".join(lines[:12]) + "\n")
    out = tmp_path / "p.json"
    small = ["--mlp-trials", "2", "--tree-trials", "1", "--latency-calls", "1"]
    assert (
        main(["train", "stop-predictor", "--traces", str(traces), "--out", str(out), *small]) == 0
    )
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("dataset: {'samples': ")
    assert [line.split(":")[0] for line in err[1:6]] == [
        "mlp trial 0",
        "mlp trial 1",
        "lightgbm trial 0",
        "random_forest trial 0",
        "xgboost trial 0",
    ]
    for line, name in zip(err[6:10], ("mlp", "lightgbm", "random_forest", "xgboost"), strict=True):
        assert line.startswith(f"{name}: threshold ") and ", held-out AUC " in line
        assert len(line) < 100
    assert err[10:] == [f"wrote {out} (threshold {err[6].split()[2].rstrip(',')})"]
