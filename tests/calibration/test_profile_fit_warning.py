"""``edgespec calibrate`` warns on stderr when the fresh profile's held-out R² is below
``MIN_PROFILE_R2`` (0.5; it carried on without a word at 0.096, then printed the warning
to stdout only), and records the fit's lines in ``comparison.md``. The profiles here are
fitted for real (``fit_target``, ``fit_draft``) on verify times built by hand: a linear
function of the batch's shape (a good fit), or that plus noise which swamps it (a poor
one); only the measuring is skipped."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from edgespec.calibration.command import comparison_text
from edgespec.calibration.fresh_profile import (
    FreshProfile,
    fit_warning,
    profile_scenario,
    profile_summary,
    scenario_grid,
)
from edgespec.hardware.cost_models import ModelArchitecture
from edgespec.policies.estimator import BatchShape
from edgespec.profiling.draft import DraftSample
from edgespec.profiling.grid import design_grid
from edgespec.profiling.measure import Sample
from edgespec.profiling.run import ProfileResult, fit_draft, fit_target

WARNING = (
    "warning: held-out R² {r2} is below 0.5: the profile's verify-time estimator explains "
    "little of the measured times, so the comparison tests the fit more than the simulator; "
    "profile again with more --runs (and --warmup) on a quieter machine (--threads 1 on a "
    "shared one), or give a better profile with --profile"
)
ARCH = ModelArchitecture(
    name="hand-built", source="test", num_layers=2, hidden_size=8, ffn_size=16, num_heads=4,
    num_kv_heads=2, head_dim=3, vocab_size=10,
)  # fmt: skip


def _fitted(noise_s: float) -> ProfileResult:
    """The scenario grid's configurations 'measured' as 1 ms + 20 µs per new token +
    10 ns per interaction, plus uniform noise up to ``noise_s``; the draft's propose calls
    as 0.5 ms per pass."""
    grid = design_grid(scenario_grid(32, 48, 4, 4))
    rng = np.random.default_rng(3)
    samples = []
    for index, config in enumerate(grid):
        shape = BatchShape.of(config.entries)
        time_s = 1e-3 + 2e-5 * shape.num_linear + 1e-8 * shape.num_interactions
        samples.append(Sample(index, 0, config.entries, time_s + noise_s * rng.random()))
    wisp, zhu = fit_target(samples, grid, ARCH, 0, 20)
    drafts = [
        DraftSample("follow_up", 32 + i, 4, BatchShape.of([(1, 32 + i)] * 4), 4, 2e-3 + 1e-6 * i)
        for i in range(12)
    ]
    draft = fit_draft("truncated", drafts, None, 2, 20)
    return ProfileResult("synthetic", tuple(grid), tuple(samples), 0, wisp, zhu, draft,
                         "hand-built", (0.0, 0.0, 0.0))  # fmt: skip


def _profile(fit: ProfileResult, out: Path, monkeypatch: pytest.MonkeyPatch) -> FreshProfile:
    """``profile_scenario`` with ``fit`` as what was measured and fitted: the real files
    are written to ``out``."""
    monkeypatch.setattr("edgespec.profiling.run.profile_pair", lambda *a, **k: fit)
    args = argparse.Namespace(
        max_new_tokens=48, gamma=4, clients=4, warmup=0, runs=1, threads=1, resume=False
    )
    prompts: list[list[tuple[int, ...]]] = [[tuple(range(32))]] * 4
    return profile_scenario(args, out, ("t", None, None), ("d", None, None), prompts)


PROFILING = "profiling t + d (4 clients' shapes) ...\n"
"""The progress line a fresh profile starts with, on stderr (the summary: stdout)."""


def test_a_poor_fit_is_warned_of_on_stderr_and_kept_with_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fit = _fitted(noise_s=0.004)  # noise up to 4 ms on a 1-4 ms signal
    fresh = _profile(fit, tmp_path, monkeypatch)
    summary = f"profile: target held-out R² 0.308, MAPE 24.3%; wrote {tmp_path}/profile.yaml"
    warning = WARNING.format(r2="0.308")
    assert fresh == FreshProfile(tmp_path / "profile.yaml", (summary, warning))
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == summary
    assert err == f"{PROFILING}edgespec calibrate: {warning}\n"  # progress and warning: stderr
    assert "R^2 0.3076" in (tmp_path / "profile.yaml").read_text()  # the fit written


def test_a_good_fit_prints_no_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh = _profile(_fitted(noise_s=0.002), tmp_path, monkeypatch)
    summary = f"profile: target held-out R² 0.738, MAPE 16.0%; wrote {tmp_path}/profile.yaml"
    assert fresh == FreshProfile(tmp_path / "profile.yaml", (summary,))
    out, err = capsys.readouterr()
    assert (out.splitlines()[-1], err) == (summary, PROFILING)


@pytest.mark.parametrize(
    ("r2", "shown"), [(0.096, "0.096"), (0.4994, "0.499"), (-1.7, "-1.700"), (np.nan, "nan")]
)
def test_a_fit_shown_below_the_threshold_is_warned_of(r2: float, shown: str) -> None:
    """nan: the held-out times did not vary (nothing to explain)."""
    assert fit_warning(r2) == WARNING.format(r2=shown)


@pytest.mark.parametrize("r2", [0.4996, 0.5, 0.819, 1.0])
def test_a_fit_shown_at_or_above_the_threshold_is_not(r2: float) -> None:
    assert fit_warning(r2) is None


def test_the_summary_line() -> None:
    line = profile_summary(0.95312, 11.46, Path("runs/c/profile.yaml"))
    assert line == "profile: target held-out R² 0.953, MAPE 11.5%; wrote runs/c/profile.yaml"


def test_comparison_md_records_the_fit_lines_under_its_header() -> None:
    lines = ("profile: target held-out R² 0.096, ...", WARNING.format(r2="0.096"))
    text = comparison_text("synthetic + truncated, ...", lines, "| metric |\n|---|")
    assert text == "\n".join(("synthetic + truncated, ...", *lines, "", "| metric |\n|---|\n"))
    assert comparison_text("h", (), "| t |") == "h\n\n| t |\n"  # no profile lines


def test_docs_show_the_warning_as_printed() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "CALIBRATION.md").read_text()
    assert "\n# edgespec calibrate: " + WARNING.format(r2="0.096") + "\n" in docs
    assert "below 0.5 (`MIN_PROFILE_R2`" in docs


def test_calibrate_warns_and_records_the_warning_in_comparison_md(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole command with the synthetic pair (real run, simulated replay), its
    profile the poor fit above: the warning on stderr and in comparison.md."""
    from edgespec.cli import main

    monkeypatch.setattr("edgespec.profiling.run.profile_pair", lambda *a, **k: _fitted(0.004))
    sizes = ["--clients", "1", "--requests", "1", "--max-new-tokens", "4", "--prompt-tokens", "8"]
    assert main(["calibrate", "--out", str(tmp_path), "--threads", "1", *sizes]) == 0
    summary = f"profile: target held-out R² 0.308, MAPE 24.3%; wrote {tmp_path}/profile.yaml"
    err = capsys.readouterr().err
    assert err == (
        "profiling synthetic + truncated (1 clients' shapes) ...\n"
        f"edgespec calibrate: {WARNING.format(r2='0.308')}\n"
        "measuring the loopback link (1 client) ...\nreal run: 1 clients x 1 requests ...\n"
    )
    lines = (tmp_path / "comparison.md").read_text().splitlines()
    assert lines[0].startswith("synthetic + truncated, 1 clients x 1 requests, γ=4")
    assert lines[1:5] == [summary, WARNING.format(r2="0.308"), "", "| metric | real (loopback "
                          "gRPC) | simulator | sim − real |"]  # fmt: skip


def test_the_help_states_the_threshold_and_when_overwrite_removes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The help named no threshold, and said --overwrite removed the earlier files first
    (they are removed once every check has passed)."""
    from edgespec.cli import main

    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "instead of profiling (a fresh profile's held-out R² below 0.5 is warned of on " in text
    assert "an earlier calibration: its files are removed once every check has passed (a " in text
