"""The profiling grid (WISP seed 000, App. C): which batches :mod:`.measure` times.

:func:`design_grid` lays out the configurations: compute-bound cold starts (total new
tokens split single / 2 / 4 / unevenly, nothing cached), memory-bound follow-ups
(L_new ∈ {1, 5, 10, 20, 50, 100} × L_total ∈ {500, 1000, 1500, 2000}, batch sizes 1 and 4),
random compute-bound and memory-bound configurations, and mixed batches of cached and
uncached requests, batch sizes 1–16. Training configurations and held-out configurations
come from different random streams (App. C: "generated with different random seeds").
No model or runtime is imported here: a checkpoint or a calibration lays the grid out
without loading the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Entry = tuple[int, int]
"""(L_new, L_cached) of one request in a batch."""


CLOCKS = ("wall", "cpu")


@dataclass(frozen=True, slots=True)
class GridSpec:
    """Sizes of the profiling grid; the defaults are WISP App. C's."""

    cold_totals: tuple[int, ...] = (1200, 1400, 1600, 1800, 2000)
    new_tokens: tuple[int, ...] = (1, 5, 10, 20, 50, 100)
    totals: tuple[int, ...] = (500, 1000, 1500, 2000)
    memory_batch_sizes: tuple[int, ...] = (1, 4)
    max_batch_size: int = 16
    num_random: int = 15
    num_mixed: int = 20
    num_test: int = 50
    warmup_runs: int = 10
    runs: int = 3
    seed: int = 0
    clock: str = "wall"
    """What a timed pass measures: ``wall`` (its latency, perf_counter) or ``cpu`` (this
    process's CPU time over it, process_time: with one torch thread, the latency the pass
    would have alone, robust to other jobs sharing the cores)."""

    def validate(self) -> None:
        if self.runs < 1 or self.warmup_runs < 0:
            raise ValueError(f"need runs >= 1 and warmup_runs >= 0, got {self}")
        if self.clock not in CLOCKS:
            raise ValueError(f"clock must be one of {CLOCKS}, got {self.clock!r}")
        if min(self.totals) <= max(self.new_tokens):
            raise ValueError("every L_total must exceed every L_new (something must be cached)")
        if min((*self.cold_totals, *self.new_tokens)) < 1 or self.max_batch_size < 1:
            raise ValueError("token counts and max_batch_size must be >= 1")


QUICK_GRID = GridSpec(
    cold_totals=(32, 64),
    new_tokens=(1, 5, 12),
    totals=(48, 96),
    memory_batch_sizes=(1, 3),
    max_batch_size=6,
    num_random=3,
    num_mixed=4,
    num_test=6,
    warmup_runs=1,
    runs=2,
)


@dataclass(frozen=True, slots=True)
class GridConfig:
    """One batch configuration: its category, split ('train' or 'test') and entries."""

    category: str
    split: str
    entries: tuple[Entry, ...]


def _split_even(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _random_configs(
    spec: GridSpec, rng: np.random.Generator, n: int, split: str
) -> list[GridConfig]:
    """n random configurations cycling over the compute, memory and mixed categories."""
    top_cold, top_total = max(spec.cold_totals), max(spec.totals)
    small_new = [x for x in spec.new_tokens if x <= max(1, top_total // 10)] or [1]
    out = []
    for i in range(n):
        kind = ("compute_random", "memory_random", "mixed")[i % 3]
        size = int(rng.integers(1, spec.max_batch_size + 1))
        entries: list[Entry] = []
        for _ in range(size):
            cold = kind == "compute_random" or (kind == "mixed" and rng.random() < 0.5)
            if cold:
                total = int(rng.integers(max(1, top_cold * 6 // 10), top_cold + 1))
                entries.append((max(1, total // size), 0))
            else:
                new = int(rng.integers(1, max(small_new) + 1))
                cached = int(rng.integers(top_total // 4, top_total - new + 1))
                entries.append((new, cached))
        if kind == "mixed" and all(c == 0 for _, c in entries) and size > 1:
            entries[-1] = (1, top_total // 2)
        out.append(GridConfig(kind, split, tuple(entries)))
    return out


def design_grid(spec: GridSpec) -> list[GridConfig]:
    """The training configurations (deterministic, then random) and the held-out ones."""
    spec.validate()
    grid: list[GridConfig] = []
    for total in spec.cold_totals:
        for parts in (1, 2, 4):
            entries = tuple((n, 0) for n in _split_even(total, parts) if n > 0)
            grid.append(GridConfig("compute", "train", entries))
        uneven = (total // 2, total // 3, total - total // 2 - total // 3)
        grid.append(GridConfig("compute", "train", tuple((n, 0) for n in uneven if n > 0)))
    for new in spec.new_tokens:
        for total in spec.totals:
            for size in spec.memory_batch_sizes:
                grid.append(GridConfig("memory", "train", ((new, total - new),) * size))
    seeds = np.random.SeedSequence(spec.seed).spawn(2)
    train_rng, test_rng = (np.random.default_rng(s) for s in seeds)
    grid += _random_configs(spec, train_rng, spec.num_random * 2 + spec.num_mixed, "train")
    grid += _random_configs(spec, test_rng, spec.num_test, "test")
    return grid
