"""edgespec profile: grid design, measurement through the engine, fits, profile files."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from edgespec.hardware.cost_models import WispCost, ZhuCost, load_profile
from edgespec.policies.estimator import BatchShape
from edgespec.profiling.checks import check_args
from edgespec.profiling.command import add_arguments
from edgespec.profiling.command import run as run_command
from edgespec.profiling.draft import measure_drafter, pass_shapes, per_token_s
from edgespec.profiling.fit import (
    WISP_TERMS,
    fit_linear,
    metrics,
    ols,
    split_indices,
    wisp_coefficients,
    wisp_design,
)
from edgespec.profiling.measure import (
    GridSpec,
    PromptSource,
    design_grid,
    measure_grid,
)
from edgespec.profiling.run import profile_pair, write_profiles
from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.testing import layer_truncated_copy, tiny_llama
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate

TRUE = (3e-5, 4e-8, 5e-6, 1.5e-2)  # a, b_compute, b_read, c (WISP Table 12's scale)


def _synthetic(n: int, noise_s: float, seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    shapes = []
    for _ in range(n):
        entries = [
            (int(rng.integers(1, 400)), int(rng.integers(0, 2000)))
            for _ in range(int(rng.integers(1, 17)))
        ]
        shapes.append(BatchShape.of(entries))
    x = wisp_design(shapes)
    y = x @ np.array(TRUE) + rng.normal(0, noise_s, n)
    return x, y


def test_ols_recovers_exact_coefficients_without_noise() -> None:
    x, y = _synthetic(40, 0.0, 0)
    np.testing.assert_allclose(ols(x, y), TRUE, rtol=1e-8)


def test_fit_with_noise_recovers_coefficients_and_intervals_cover_them() -> None:
    x, y = _synthetic(300, 2e-3, 1)
    train, test = split_indices(300, 0.3, np.random.default_rng(0))
    assert len(train) == 210 and len(test) == 90 and not set(train) & set(test)
    fit = fit_linear(WISP_TERMS, x, y, train, test, np.random.default_rng(0), 300)
    for true, value, (low, high) in zip(TRUE, fit.values, fit.intervals, strict=True):
        assert low <= true <= high
        assert low < value < high
    np.testing.assert_allclose(fit.values, TRUE, rtol=0.15)
    assert fit.test.r2 > 0.99 and fit.test.num_samples == 90
    assert abs(fit.test.mae_s - 2e-3 * np.sqrt(2 / np.pi)) < 4e-4  # E|N(0, σ)| = σ√(2/π)
    coeffs, clipped = wisp_coefficients(fit)
    assert clipped == () and coeffs.a_s == fit.values[0]


def test_metrics_exact_values() -> None:
    m = metrics(np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 3.0]))
    assert m.mae_s == pytest.approx(2 / 3)
    assert m.mape_pct == pytest.approx((0 + 50 + 25) / 3)
    assert m.r2 == pytest.approx(1 - 2 / (16 / 9 + 1 / 9 + 25 / 9))  # mean 7/3


def test_ols_refuses_too_few_samples() -> None:
    with pytest.raises(ValueError, match="3 samples cannot fit 4 coefficients"):
        ols(np.ones((3, 4)), np.ones(3))


def test_default_grid_follows_wisp_appendix_c() -> None:
    grid = design_grid(GridSpec())
    cats: dict[tuple[str, str], int] = {}
    for c in grid:
        cats[(c.category, c.split)] = cats.get((c.category, c.split), 0) + 1
    assert cats[("compute", "train")] == 20  # 5 totals x (single, split-2, split-4, uneven)
    assert cats[("memory", "train")] == 48  # 6 L_new x 4 L_total x batch sizes {1, 4}
    assert sum(n for (_, split), n in cats.items() if split == "train") == 118
    assert sum(n for (_, split), n in cats.items() if split == "test") == 50
    for c in grid:
        assert 1 <= len(c.entries) <= 16
        if c.category == "compute":
            assert all(cached == 0 for _, cached in c.entries)
            assert 1200 <= sum(n for n, _ in c.entries) <= 2000
        if c.category == "memory":
            (new, cached), size = c.entries[0], len(c.entries)
            assert new in (1, 5, 10, 20, 50, 100) and new + cached in (500, 1000, 1500, 2000)
            assert size in (1, 4)
        if c.category == "mixed" and len(c.entries) > 1:
            assert any(cached == 0 for _, cached in c.entries) or len(c.entries) == 1
            assert any(cached > 0 for _, cached in c.entries)
    assert design_grid(GridSpec()) == grid  # deterministic


def test_grid_spec_rejects_totals_without_cache() -> None:
    with pytest.raises(ValueError, match="every L_total must exceed every L_new"):
        design_grid(GridSpec(totals=(50,), new_tokens=(1, 100)))


def test_prompt_source_refuses_a_duplicate() -> None:
    source = PromptSource(vocab_size=1, seed=0, max_draws=5)
    assert source.take(3) == (0, 0, 0)
    with pytest.raises(RuntimeError, match="duplicate profiling prompt of 3 tokens"):
        source.take(3)


class _Recording:
    """A TargetBackend wrapper recording every forward pass's items."""

    def __init__(self, inner: TransformersTarget) -> None:
        self.inner = inner
        self.passes: list[list[tuple[int, int]]] = []

    vocab_size = property(lambda self: self.inner.vocab_size)
    eos_token_ids = property(lambda self: self.inner.eos_token_ids)
    max_context_tokens = property(lambda self: self.inner.max_context_tokens)

    def forward(self, items: Sequence[ForwardItem]) -> list[ForwardOutput]:
        self.passes.append([(len(i.new_token_ids), i.kv_len) for i in items])
        return self.inner.forward(items)

    def crop(self, kv: Any, n: int) -> Any:
        return self.inner.crop(kv, n)

    def gather(self, kv: Any, positions: Sequence[int]) -> Any:
        return self.inner.gather(kv, positions)

    def kv_bytes(self, kv: Any) -> int:
        return self.inner.kv_bytes(kv)


SMALL = GridSpec(
    cold_totals=(12,), new_tokens=(1, 4), totals=(10,), memory_batch_sizes=(1, 2),
    max_batch_size=3, num_random=1, num_mixed=1, num_test=2, warmup_runs=2, runs=2,
)  # fmt: skip


def test_measure_grid_discards_warmups_and_times_the_engine_passes() -> None:
    torch.set_num_threads(1)
    backend = _Recording(TransformersTarget(tiny_llama(0, hidden_size=32)))
    grid = design_grid(SMALL)
    samples, num_prompts = measure_grid(backend, grid, SMALL)  # type: ignore[arg-type]
    assert len(samples) == len(grid) * 2  # runs only; warm-ups not kept
    assert [(s.config_index, s.run) for s in samples[:4]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # every run (warm-up or not) opens one fresh session with a unique prompt per entry
    assert num_prompts == sum(len(c.entries) for c in grid) * 4
    # passes: per run one untimed setup pass if any entry is cached, then the timed pass,
    # whose (new, cached) per entry is exactly what the sample records
    passes = iter(backend.passes)
    kept = iter(samples)
    for config in grid:
        for run in range(4):
            if any(cached for _, cached in config.entries):
                setup = next(passes)
                cached_entries = [c for _, c in config.entries if c]
                assert setup == [(c + 1, 0) for c in cached_entries]  # prompt + 1 draft, cold
            timed = next(passes)
            if run >= 2:  # the first two are warm-ups
                assert tuple(timed) == next(kept).entries
    assert next(passes, None) is None and next(kept, None) is None
    for s in samples:
        config = grid[s.config_index]
        assert [new for new, _ in s.entries] == [new for new, _ in config.entries]
        for (_, cached), (_, nominal) in zip(s.entries, config.entries, strict=True):
            assert cached in (nominal, nominal + 1)  # +1 when the setup draft was accepted
        assert s.time_s > 0


def test_drafter_passes_and_per_token_latency() -> None:
    assert pass_shapes(5, 0, 3) == [(5, 0), (1, 5), (1, 6)]
    assert pass_shapes(1, 9, 2) == [(1, 9), (1, 10)]
    draft = layer_truncated_copy(tiny_llama(0, num_layers=2, hidden_size=32), 1)
    samples = measure_drafter(lambda: TransformersDraft(draft), 64, (8, 16), 3, 2, 1, 0)
    assert [(s.kind, s.context_tokens) for s in samples] == [
        ("cold", 8), ("follow_up", 8), ("cold", 8), ("follow_up", 8),
        ("cold", 16), ("follow_up", 16), ("cold", 16), ("follow_up", 16),
    ]  # fmt: skip
    cold = samples[0]
    assert cold.shape == BatchShape.of([(8, 0), (1, 8), (1, 9)]) and cold.num_passes == 3
    follow = samples[1]
    assert follow.shape.num_linear in (3, 4, 5)  # 1 fresh token (+ a coincidental match)
    expected = np.mean([s.time_s / 3 for s in samples if s.kind == "follow_up"])
    assert per_token_s(samples) == pytest.approx(expected)


def _tiny_result(target_name: str = "tiny") -> Any:
    torch.set_num_threads(1)
    target = tiny_llama(0, num_layers=2, hidden_size=32)
    draft = layer_truncated_copy(target, 1)
    spec = GridSpec(
        cold_totals=(16, 32), new_tokens=(1, 4, 8), totals=(24, 48), memory_batch_sizes=(1, 2),
        max_batch_size=4, num_random=2, num_mixed=3, num_test=6, warmup_runs=1, runs=1,
    )  # fmt: skip
    return profile_pair(
        target_name, target, TransformersTarget(target), spec,
        ("tiny-draft", lambda: TransformersDraft(draft), draft), draft_contexts=(8, 16, 24),
        num_bootstrap=50,
    )  # fmt: skip


def test_profile_files_load_in_the_simulator_and_simulate(tmp_path: Path) -> None:
    result = _tiny_result()
    paths = write_profiles(result, tmp_path / "p.yaml", "edgespec profile --target tiny")
    assert [p.name for p in paths] == ["p.yaml", "p-draft.yaml", "p-report.json"]
    target_cost = load_profile(str(tmp_path / "p.yaml"))
    assert isinstance(target_cost, WispCost)
    coeffs, _ = wisp_coefficients(result.wisp)
    assert target_cost.coefficients == coeffs
    text = (tmp_path / "p.yaml").read_text()
    assert "# command: edgespec profile --target tiny" in text and "kind: wisp" in text
    scenario = scenario_from_dict(
        {
            "name": "profiled", "duration_s": 2.0,
            "links": {"default": {"rtt_ms": 1.0}},
            "auto_topology": {
                "devices": [{"name": "d", "count": 2, "draft_model": "llama-68m",
                             "hardware": "generic-cpu",
                             "cost_model": {"kind": "wisp", "profile": str(paths[1])}}],
                "servers": [{"name": "s", "count": 1, "target_model": "gemma3-270m",
                             "hardware": "generic-cpu",
                             "cost_model": {"kind": "wisp", "profile": str(paths[0])}}],
            },
            "workload": {"kind": "closed_loop", "prompt_tokens": [20], "output_tokens": [16]},
        },
        [],
    )  # fmt: skip
    sim = simulate(scenario, progress=False)
    assert sim.requests and all(r.num_output_tokens == 16 for r in sim.requests)


def test_zhu_profile_written_for_a_model_preset(tmp_path: Path) -> None:
    result = _tiny_result("gemma3-270m")
    paths = write_profiles(result, tmp_path / "g.yaml", "cmd")
    assert [p.name for p in paths] == ["g.yaml", "g-zhu.yaml", "g-draft.yaml", "g-report.json"]
    cost = load_profile(str(tmp_path / "g-zhu.yaml"))
    assert isinstance(cost, ZhuCost) and cost.model.name == "gemma3-270m"
    assert cost.c1_s_per_flop == max(result.zhu.values[0], 0.0)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--out", "p.txt"), "--out must end in .yaml or .yml, got 'p.txt'"),
        (("--scale", "2"), "--scale must be in (0, 1], got 2.0"),
    ],
)
def test_bad_arguments_give_clear_errors(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _args("--target", "t", *argv)
    assert check_args(args) == message
    assert run_command(args) == 2
    assert capsys.readouterr().err == f"edgespec profile: {message}\n"


def test_threads_below_one_is_a_usage_error_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _args("--target", "t", "--threads", "0")
    assert exit_info.value.code == 2
    assert "argument --threads: must be >= 1, got 0" in capsys.readouterr().err


def test_missing_target_fails_naming_it(tmp_path: Path) -> None:
    from edgespec.errors import UserInputError

    with pytest.raises(UserInputError, match="no-such-model"):
        run_command(_args("--target", str(tmp_path / "no-such-model"), "--quick"))


def test_median_runs_picks_each_configurations_median() -> None:
    from edgespec.profiling.measure import Sample
    from edgespec.profiling.run import median_runs

    samples = [
        Sample(0, 0, ((5, 10),), 0.3), Sample(0, 1, ((5, 11),), 9.0), Sample(0, 2, ((5, 10),), 0.2),
        Sample(1, 0, ((1, 0),), 0.5), Sample(1, 1, ((1, 0),), 0.1),
    ]  # fmt: skip
    assert median_runs(samples) == [samples[0], samples[4]]


def test_command_logs_progress_lines_when_not_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir = tmp_path / "tiny"
    tiny_llama().save_pretrained(str(model_dir))
    argv = ("--target", str(model_dir), "--draft", "ngram", "--quick", "--threads", "1")
    args = _args(*argv, "--bootstrap", "20", "--out", str(tmp_path / "p.yaml"))
    assert run_command(args) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("profiled ")]
    assert lines and lines[-1].endswith("configurations")
    done, total = lines[-1].split()[1].split("/")
    assert done == total
    assert (tmp_path / "p.yaml").is_file()
