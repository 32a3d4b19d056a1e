"""What ``edgespec calibrate``'s fresh profile says while it is made and once written.

Its files' headers said they were ``measured by `edgespec profile```, whose command line
they then named as ``edgespec calibrate ...``: they now say ``edgespec calibrate``, and
``edgespec profile``'s still say ``edgespec profile``. A model draft's batched timing (12
cells after the grid, minutes for Gemma) printed nothing: each cell timed now says so on
stderr, the first and the last always and the others at most one each ``LINE_GAP_S``."""

from __future__ import annotations

import argparse
import io
import re
import sys
from functools import partial
from pathlib import Path

import pytest
import torch
import yaml

from edgespec.calibration.fresh_profile import profile_scenario
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.testing import layer_truncated_copy, tiny_llama
from edgespec.sweeps.progress import LINE_GAP_S
from tests.calibration.test_profile_fit_warning import _fitted, _profile
from tests.profiling.test_profile_out import _profile as edgespec_profile


def _head(path: Path) -> tuple[list[str], str]:
    """A profile file's first two header lines and its ``source:`` field."""
    text = path.read_text()
    return text.splitlines()[:2], yaml.safe_load(text)["source"]


def test_a_fresh_profile_says_calibrate_measured_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["edgespec", "calibrate", "--clients", "4"])
    _profile(_fitted(noise_s=0.002), tmp_path, monkeypatch)
    command = "# command: edgespec calibrate --clients 4"
    assert _head(tmp_path / "profile.yaml") == (
        ["# target synthetic (wisp), measured by `edgespec calibrate` on hand-built", command],
        "edgespec calibrate (target synthetic, wisp; see comments)",
    )
    assert _head(tmp_path / "profile-draft.yaml") == (
        ["# drafter truncated (wisp), measured by `edgespec calibrate` on hand-built", command],
        "edgespec calibrate (drafter truncated, wisp; see comments)",
    )


def test_edgespec_profile_still_says_profile_measured_it(tmp_path: Path) -> None:
    model = tmp_path / "tiny"
    tiny_llama(0, num_layers=1).save_pretrained(str(model))
    out = tmp_path / "run" / "p.yaml"
    assert edgespec_profile(model, out) == 0
    lines, source = _head(out)
    assert re.fullmatch(
        rf"# target {model} \(wisp\), measured by `edgespec profile` on .+", lines[0]
    )
    assert lines[1].startswith("# command: edgespec profile ")
    assert source == f"edgespec profile (target {model}, wisp; see comments)"


def test_the_draft_batched_timing_says_its_progress_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tiny pair profiled for real (a few seconds): the cells are (b, context) for b in
    1, 2, 4, 8 and the contexts 8, 10, 12 (the prompt, plus half and all of the output)."""
    monkeypatch.setattr(sys, "argv", ["edgespec", "calibrate"])
    torch.set_num_threads(1)
    target = tiny_llama(0, num_layers=2)
    draft = layer_truncated_copy(target, 1)
    args = argparse.Namespace(
        max_new_tokens=4, gamma=2, clients=1, warmup=0, runs=1, threads=1, resume=False
    )
    prompts: list[list[tuple[int, ...]]] = [[tuple(range(1, 9))]]
    profile_scenario(args, tmp_path, ("tiny", target, TransformersTarget(target)),
                     ("tiny-draft", partial(TransformersDraft, draft), draft), prompts)  # fmt: skip
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if "draft batch" in line]
    assert lines[0] == "  timed draft batch b=1 at 8 tokens (1/12 cells)"
    assert lines[-1] == "  timed draft batch b=8 at 12 tokens (12/12 cells)"
    pattern = r"  timed draft batch b=[1248] at (8|10|12) tokens \(\d+/12 cells\)"
    assert all(re.fullmatch(pattern, line) for line in lines)
    assert "draft batch" not in out  # progress is stderr's; stdout keeps the results


def test_cell_lines_are_at_most_one_each_line_gap_but_the_last() -> None:
    from edgespec.calibration.fresh_profile import DraftCellLines

    cells = [(1, 8), (2, 8), (4, 8), (8, 8)]
    times = iter([0.0, LINE_GAP_S - 0.1, LINE_GAP_S, LINE_GAP_S + 0.1])
    stream = io.StringIO()
    lines = DraftCellLines(cells, stream, clock=lambda: next(times))
    for cell in cells:
        lines(cell, [])
    assert stream.getvalue().splitlines() == [
        "  timed draft batch b=1 at 8 tokens (1/4 cells)",
        "  timed draft batch b=4 at 8 tokens (3/4 cells)",
        "  timed draft batch b=8 at 8 tokens (4/4 cells)",
    ]
