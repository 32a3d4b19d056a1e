"""``edgespec bench prefix``: its JSON holds every timing per prefix, and a bad
``--prefix-lens`` is one clear line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main

SMALL = ["bench", "prefix", "--synthetic-layers", "2", "--synthetic-hidden", "32",
         "--repeats", "2", "--threads", "1"]  # fmt: skip


def test_rows_per_prefix_with_every_timing(tmp_path: Path) -> None:
    out = tmp_path / "prefix.json"
    assert main([*SMALL, "--prefix-lens", "8,32", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [r["prefix"] for r in data["prefix"]] == [8, 32]
    for row in data["prefix"]:
        assert len(row["cold_ms"]) == len(row["follow_up_ms"]) == 2
        assert row["cold_ms_best"] == min(row["cold_ms"])
        assert row["cold_over_follow_up"] == pytest.approx(
            row["cold_ms_best"] / row["follow_up_ms_best"]
        )


def test_bad_prefix_lengths(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SMALL, "--prefix-lens", "8,x"]) == 2
    assert "--prefix-lens expects comma-separated integers, got '8,x'" in capsys.readouterr().err


def test_json_in_a_folder_not_made_yet_is_written(tmp_path: Path) -> None:
    out = tmp_path / "new" / "prefix.json"
    assert main([*SMALL, "--prefix-lens", "8", "--json", str(out)]) == 0
    assert [r["prefix"] for r in json.loads(out.read_text())["prefix"]] == [8]
    assert [p.name for p in out.parent.iterdir()] == ["prefix.json"]  # no temporary left


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--prefix-lens", "8,4093"],
         "the longest --prefix-lens (4,093 tokens) + --gamma (4) exceeds the target's context "
         "of 4,096 tokens"),
        (["--prefix-lens", str(10**12)],
         f"the longest --prefix-lens ({10**12:,} tokens) + --gamma (4) exceeds the target's "
         "context of 4,096 tokens"),
    ],
)  # fmt: skip
def test_what_the_target_cannot_take_is_one_line_before_timing(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*SMALL, *flags]) == 2
    assert capsys.readouterr().err == f"edgespec bench prefix: {message}\n"


def test_a_saved_model_is_probed_once_per_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model loaded from weight files is built through the probe cache: the first run
    probes and records the pass in $EDGESPEC_CACHE, the second finds it and does not probe."""
    from edgespec.runtime.backends.transformers_backend import TransformersTarget
    from edgespec.runtime.testing import tiny_llama

    model_dir = tmp_path / "model"
    tiny_llama(seed=0).save_pretrained(model_dir)
    monkeypatch.setenv("EDGESPEC_CACHE", str(tmp_path / "cache"))
    probes: list[int] = []
    probe = TransformersTarget._check_batch_invariance

    def counted(self: TransformersTarget, progress: Any) -> None:
        probes.append(1)
        probe(self, progress)

    monkeypatch.setattr(TransformersTarget, "_check_batch_invariance", counted)
    argv = ["bench", "prefix", "--target", str(model_dir), "--prefix-lens", "8",
            "--repeats", "1", "--threads", "1"]  # fmt: skip
    assert main(argv) == 0
    records = list((tmp_path / "cache" / "checks" / "attention-masks").glob("*.json"))
    assert len(probes) == 1 and len(records) == 1
    assert main(argv) == 0
    assert len(probes) == 1  # the recorded pass: no probe on the second run
