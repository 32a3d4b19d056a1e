"""``edgespec calibrate``'s sizes: refused in one line (exit 2) before anything is profiled,
and the small runs they allow work to the end (the grid, the comparison's table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgespec.calibration.comparison import Comparison, RunSummary
from edgespec.calibration.fresh_profile import scenario_grid
from edgespec.cli import main
from edgespec.profiling.grid import design_grid


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (  # were run: four billion prompts built before the run started
            ["--requests", "1000000000"],
            "--clients 4 x --requests 1000000000 = 4,000,000,000 requests; "
            "a calibration runs at most 1,000",
        ),
        (  # was a ValueError traceback from the profiling grid
            ["--gamma", "100000"],
            "--gamma 100000: at most 32 (the calibration server's max_draft_tokens)",
        ),
        (  # was a ZeroDivisionError after the whole run
            ["--max-new-tokens", "1"],
            "--max-new-tokens 1: at least 2 (TPOT is the time between output tokens)",
        ),
        (  # were built (a billion-token prompt), then refused by the server after profiling
            ["--prompt-tokens", "1000000000"],
            "--prompt-tokens (1,000,000,000 tokens) + --max-new-tokens (48) exceeds the "
            "target's context of 4,096 tokens",
        ),
        (
            ["--prompt-tokens", "4000", "--max-new-tokens", "97"],
            "--prompt-tokens (4,000 tokens) + --max-new-tokens (97) exceeds the target's "
            "context of 4,096 tokens",
        ),
    ],
)
def test_sizes_a_calibration_cannot_run_are_refused_before_profiling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    out = tmp_path / "c"
    assert main(["calibrate", "--out", str(out), "--threads", "1", *flags]) == 2
    assert capsys.readouterr().err == f"edgespec calibrate: {message}\n"
    assert not (out / "profile.yaml").exists()


def test_threads_are_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    """100,000 torch threads hung the first matrix product."""
    with pytest.raises(SystemExit) as stop:
        main(["calibrate", "--threads", "100000"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(
        "edgespec calibrate: error: argument --threads: must be <= 256, got 100000\n"
    )


def test_short_prompts_and_outputs_still_have_a_grid() -> None:
    """One prompt token and two new ones with γ = 4: a follow-up's total (2) was below its
    new tokens (5), and the grid a ValueError."""
    spec = scenario_grid(prompt_tokens=1, max_new_tokens=2, gamma=4, clients=1)
    assert spec.totals == (6,)
    assert spec.new_tokens == (1, 2, 3, 5)
    assert design_grid(spec)


def _summary(queue_ms: float) -> RunSummary:
    return RunSummary(0.01, 100.0, 2.0, 0.05, 1.0, 1, 100, 5.0, 1.0, queue_ms, 20.0)


def test_a_quantity_the_real_run_measured_as_zero_has_no_relative_difference() -> None:
    """One client never queues: the table was a ZeroDivisionError."""
    table = Comparison(_summary(0.0), _summary(0.5), 1.0, (0.0, 0.0, 0.0)).table()
    assert "| queue ms / round | 0.000 | 0.500 | — |" in table.splitlines()
    assert "| verify ms / round | 20.000 | 20.000 | +0.0% |" in table.splitlines()
