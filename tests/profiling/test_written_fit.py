"""What ``edgespec profile`` writes is what it reports: the Eq. 19 coefficients written are
the ones whose held-out metrics are shown (a negative term fixed at 0 and the rest
refitted, and said), a poor fit is warned of, and each file says its role, clock and the
range it measured; ``--clock cpu`` with several threads and duplicate ``--scale`` grid
points are refused or removed."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest
import yaml

from edgespec.hardware.cost_models import ModelArchitecture, load_profile
from edgespec.policies.estimator import BatchShape
from edgespec.profiling.checks import check_args
from edgespec.profiling.command import add_arguments, grid_spec
from edgespec.profiling.draft import DraftSample
from edgespec.profiling.fit import metrics
from edgespec.profiling.grid import QUICK_GRID, design_grid
from edgespec.profiling.measure import Sample
from edgespec.profiling.quality import MIN_PROFILE_R2, poor_fit_warning
from edgespec.profiling.run import ProfileResult, fit_draft, fit_target, write_profiles

ARCH = ModelArchitecture(
    name="hand-built", source="test", num_layers=2, hidden_size=8, ffn_size=16, num_heads=4,
    num_kv_heads=2, head_dim=3, vocab_size=10,
)  # fmt: skip


def _result(interaction_s: float = -2e-9, noise_s: float = 0.0) -> ProfileResult:
    """The quick grid 'measured' as 1 ms + 40 µs per new token + ``interaction_s`` per
    query-key interaction + 1 µs per cached token (+ uniform noise up to ``noise_s``)."""
    grid = design_grid(QUICK_GRID)
    rng = np.random.default_rng(5)
    samples = []
    for index, config in enumerate(grid):
        s = BatchShape.of(config.entries)
        time_s = 1e-3 + 4e-5 * s.num_linear + interaction_s * s.num_interactions
        time_s += 1e-6 * s.num_cached + noise_s * rng.random()
        samples.append(Sample(index, 0, config.entries, time_s))
    wisp, zhu = fit_target(samples, grid, ARCH, 0, 20)
    drafts = [
        DraftSample("follow_up", 32 + i, 4, BatchShape.of([(1, 32 + i)] * 4), 4, 2e-3 + 1e-6 * i)
        for i in range(12)
    ]
    draft = fit_draft("d", drafts, None, 2, 20)
    return ProfileResult("t", tuple(grid), tuple(samples), 0, wisp, zhu, draft, "cpu",
                         (0.0, 0.0, 0.0), "cpu")  # fmt: skip


def test_a_negative_term_is_fixed_at_0_and_the_metrics_are_the_written_coefficients() -> None:
    result = _result()
    fit = result.wisp
    assert fit.clipped == ("b_compute_s",)
    assert fit.as_dict()["b_compute_s"] == 0.0 and min(fit.values) >= 0
    assert fit.intervals[1] == (0.0, 0.0)  # refitted without it, every resample too
    tests = [s for s in result.samples if result.grid[s.config_index].split == "test"]
    a, b_c, b_r, c = fit.values
    predicted = [
        a * sh.num_linear + b_c * sh.num_interactions + b_r * sh.num_cached + c
        for sh in (s.shape for s in tests)
    ]
    assert fit.test == metrics(np.array([s.time_s for s in tests]), np.array(predicted))


def test_the_profile_file_says_what_was_clipped_and_what_it_is(tmp_path: Path) -> None:
    result = _result()
    write_profiles(result, tmp_path / "p.yaml", "edgespec profile x")
    text = (tmp_path / "p.yaml").read_text()
    t = result.wisp.test
    assert f"# held-out fit (6 samples): R^2 {t.r2:.4f} " in text
    assert (
        "# b_compute_s clipped to 0 (negative in the unconstrained fit) and the other terms "
        "refitted; the metrics are the written coefficients'\n"
    ) in text
    data = yaml.safe_load(text)
    assert {k: data[k] for k in ("kind", "role", "clock")} == {
        "kind": "wisp", "role": "target", "clock": "cpu",
    }  # fmt: skip
    assert (data["measured_max_batch_size"], data["measured_max_context_tokens"]) == (6, 96)
    assert data["b_compute_s"] == 0.0 and data["a_s"] == result.wisp.values[0]
    draft = yaml.safe_load((tmp_path / "p-draft.yaml").read_text())
    assert {k: draft[k] for k in ("role", "clock")} == {"role": "draft", "clock": "wall"}
    assert (draft["measured_max_batch_size"], draft["measured_max_context_tokens"]) == (1, 47)
    load_profile(str(tmp_path / "p.yaml"))  # the fields it now holds load
    report = (tmp_path / "p-report.json").read_text()
    assert '"clipped_to_0": [\n   "b_compute_s"\n  ]' in report


def test_a_poor_fit_is_warned_of_with_what_to_do() -> None:
    from edgespec.profiling.quality import fit_warnings

    assert MIN_PROFILE_R2 == 0.5
    assert fit_warnings(_result(interaction_s=1e-9)) == []
    noisy = _result(interaction_s=1e-9, noise_s=0.004)
    t = noisy.wisp.test
    assert f"{t.r2:.3f}" == "0.027" and f"{t.mape_pct:.1f}" == "37.6"
    assert fit_warnings(noisy) == [
        "warning: the target's Eq. 19 fit predicts held-out batches poorly (R² 0.027, "
        "MAPE 37.6%; wanted R² >= 0.5 and MAPE <= 20%): times simulated from it follow its "
        "error more than the batch; profile a larger grid (without --quick, --scale nearer "
        "1) with more --runs, on a quieter machine"
    ]
    assert poor_fit_warning("x", noisy.draft.wisp) is None  # type: ignore[union-attr]


def _args(*flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["--target", "t", *flags])


def test_the_cpu_clock_with_several_threads_is_refused() -> None:
    assert check_args(_args("--clock", "cpu", "--threads", "2")) == (
        "--clock cpu sums the CPU time of all --threads 2 threads, so a pass would read about "
        "that many times its latency: give --threads 1 with --clock cpu"
    )
    assert check_args(_args("--clock", "cpu", "--threads", "1")) is None


@pytest.mark.parametrize(
    ("scale", "cold", "new", "totals"),
    [
        ("0.1", (120, 140, 160, 180, 200), (1, 2, 5, 10), (50, 100, 150, 200)),
        ("0.01", (12, 14, 16, 18, 20), (1,), (5, 10, 15, 20)),
        ("0.001", (2,), (1,), (2,)),
    ],
)
def test_scale_scales_every_token_count_and_keeps_each_once(
    scale: str, cold: tuple[int, ...], new: tuple[int, ...], totals: tuple[int, ...]
) -> None:
    spec = grid_spec(_args("--scale", scale))
    assert (spec.cold_totals, spec.new_tokens, spec.totals) == (cold, new, totals)
    spec.validate()
