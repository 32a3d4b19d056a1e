"""``edgespec train wisv``'s metrics file counts instances and mismatches as integers in
every split and in the baseline's report (was ``"instances": 576.0``), as ``train awc``'s
report counts its rows and scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from edgespec.cli import main
from tests.learn.wisv.test_train import synthetic


def test_the_metrics_count_instances_and_mismatches_as_integers(tmp_path: Path) -> None:
    data = tmp_path / "d.npz"
    synthetic().save(data)
    out = tmp_path / "out"
    flags = ["--epochs", "2", "--width", "8", "--validation", "0.2"]
    assert main(["train", "wisv", "--data", str(data), "--out-dir", str(out), *flags]) == 0
    first = out / "tiny-head.json"
    again = ["--out-dir", str(tmp_path / "again"), "--baseline-head", str(first)]
    assert main(["train", "wisv", "--data", str(data), *again, *flags]) == 0
    report = json.loads((tmp_path / "again" / "tiny-metrics.json").read_text())["report"]
    splits = [report[s] for s in ("train", "validation", "held_out")]
    splits += [report["baseline"][s] for s in ("train", "held_out")]
    for split in splits:
        counts = (split["instances"], split["mismatches"])
        assert all(type(n) is int for n in counts), counts
        assert split["instances"] == 8 * split["mismatches"] > 0  # 8 CSI draws a mismatch
