"""``edgespec profile``'s flags with upper bounds (``--gamma``, ``--bootstrap``) and a
checkpoint whose header is malformed: one line, exit 2, before any model loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.profiling.checkpoint import FORMAT, VERSION


def _profile(tmp_path: Path, *flags: str) -> int:
    """``edgespec profile`` of a target that does not exist: a run that got as far as
    loading it would fail differently."""
    target = str(tmp_path / "never-loaded")
    return main(["profile", "--target", target, "--out", str(tmp_path / "p.yaml"), *flags])


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--gamma", "257"], "--gamma must be in [1, 256], got 257"),
        (["--gamma", "0"], "--gamma must be in [1, 256], got 0"),
        (["--bootstrap", "100001"], "--bootstrap must be in [1, 100,000], got 100001"),
        (["--bootstrap", str(10**30)], f"--bootstrap must be in [1, 100,000], got {10**30}"),
    ],
)
def test_out_of_range_flags_are_refused_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], problem: str
) -> None:
    assert _profile(tmp_path, *flags) == 2
    assert capsys.readouterr().err == f"edgespec profile: {problem}\n"


@pytest.mark.parametrize("setup", [[1], "x", None])
def test_a_checkpoint_whose_setup_is_not_an_object_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: object
) -> None:
    checkpoint = tmp_path / "p-samples.jsonl"
    header = {"format": FORMAT, "version": VERSION, "setup": setup}
    checkpoint.write_text(json.dumps(header) + "\n")
    assert _profile(tmp_path, "--resume") == 2
    assert capsys.readouterr().err == (
        f"edgespec profile: {checkpoint}:1: setup must be an object, got {setup!r}\n"
    )
