"""edgespec profile's measurement through the engine (warm-ups discarded, each timed pass
the sample's shape), the drafter's passes, the median of runs, and the profile files it
writes, loaded by the simulator. Fits on synthetic samples: test_wisp_fit.py; the default
grid: test_grid_design.py; the command: test_profile_command.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from edgespec.hardware.cost_models import WispCost, ZhuCost, load_profile
from edgespec.policies.estimator import BatchShape
from edgespec.profiling.draft import measure_drafter, pass_shapes, per_token_s
from edgespec.profiling.fit import wisp_coefficients
from edgespec.profiling.grid import GridSpec, design_grid
from edgespec.profiling.measure import measure_grid
from edgespec.profiling.run import profile_pair, write_profiles
from edgespec.runtime.backends.base import ForwardItem, ForwardOutput
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.backends.transformers_draft import TransformersDraft
from edgespec.runtime.testing import layer_truncated_copy, tiny_llama
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.simulator import simulate


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
    assert [p.name for p in paths] == [
        "g.yaml", "g-zhu.yaml", "g-zhu-printed.yaml", "g-draft.yaml", "g-report.json"
    ]  # fmt: skip
    cost = load_profile(str(tmp_path / "g-zhu.yaml"))
    assert isinstance(cost, ZhuCost) and cost.model.name == "gemma3-270m"
    assert cost.c1_s_per_flop == max(result.zhu.values[0], 0.0)
    printed = load_profile(str(tmp_path / "g-zhu-printed.yaml"))  # the same samples' fit
    assert isinstance(printed, ZhuCost) and printed.flops == "printed"
    assert (printed.c1_s_per_flop, printed.c2_s) == tuple(
        max(v, 0.0) for v in result.zhu_printed.values
    )


def test_median_runs_picks_each_configurations_median() -> None:
    from edgespec.profiling.measure import Sample
    from edgespec.profiling.run import median_runs

    samples = [
        Sample(0, 0, ((5, 10),), 0.3), Sample(0, 1, ((5, 11),), 9.0), Sample(0, 2, ((5, 10),), 0.2),
        Sample(1, 0, ((1, 0),), 0.5), Sample(1, 1, ((1, 0),), 0.1),
    ]  # fmt: skip
    assert median_runs(samples) == [samples[0], samples[4]]
