"""A profile run's samples fitted (Zhu et al. seed 001, §II-D; WISP seed 000, App. C):
the target's and drafter's Eq. 19, and their Eq. 17 over the architecture's FLOPs
(``flops: architecture``, the fleet simulator's ``cost_model: {kind: zhu}``) and, from the
same samples, over Zhu's printed FLOPs (``flops: printed``, what a ``pipeline:``
scenario's stages are priced by)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgespec.hardware.cost_models import ModelArchitecture, ZhuCost, ZhuFlops
from edgespec.profiling.draft import DraftSample, per_token_s
from edgespec.profiling.fit import (
    WISP_TERMS,
    ZHU_TERMS,
    LinearFit,
    fit_linear,
    split_indices,
    wisp_design,
)
from edgespec.profiling.measure import GridConfig, Sample


@dataclass(frozen=True, slots=True)
class DraftProfile:
    """The drafter's measurements and fits (``zhu`` and ``zhu_printed``, Eq. 17 over the
    architecture's and Zhu's printed FLOPs, are None for a model-free drafter)."""

    name: str
    samples: tuple[DraftSample, ...]
    wisp: LinearFit
    zhu: LinearFit | None
    per_token_s: float
    zhu_printed: LinearFit | None = None


def _zhu_design(
    spec: ModelArchitecture, rows: Sequence[tuple[int, int, int]], flops: ZhuFlops
) -> Any:
    """[Σ FLOPs, passes] for rows of (N_linear, N_interactions, passes), the FLOPs those
    a loaded ``flops`` profile prices a pass by (:class:`ZhuCost` with c1 = 1, c2 = 0)."""
    count = ZhuCost(spec, 1.0, 0.0, flops)
    return np.array([[count.batch_time_s(0, lin, inter, 0), n] for lin, inter, n in rows])


def median_runs(samples: Sequence[Sample]) -> list[Sample]:
    """Per configuration, its median run (the lower median for an even count): one point
    per configuration as in App. C, robust to a run slowed by another process."""
    by_config: dict[int, list[Sample]] = {}
    for s in samples:
        by_config.setdefault(s.config_index, []).append(s)
    out = []
    for index in sorted(by_config):
        runs = sorted(by_config[index], key=lambda s: s.time_s)
        out.append(runs[(len(runs) - 1) // 2])
    return out


def _target_points(
    samples: Sequence[Sample], grid: Sequence[GridConfig]
) -> tuple[list[Sample], Any, Any, Any]:
    """The configurations' median runs, their times, and the train and test rows."""
    points = median_runs(samples)
    split = np.array([grid[s.config_index].split for s in points])
    y = np.array([s.time_s for s in points])
    return points, y, np.flatnonzero(split == "train"), np.flatnonzero(split == "test")


def fit_target(
    samples: Sequence[Sample],
    grid: Sequence[GridConfig],
    spec: ModelArchitecture,
    seed: int,
    boot: int,
) -> tuple[LinearFit, LinearFit]:
    """WISP and Zhu (architecture FLOPs) fits on the training configurations' median
    runs, metrics on the held-out configurations' median runs."""
    points, y, train, test = _target_points(samples, grid)
    rng = np.random.default_rng(seed)
    x = wisp_design([s.shape for s in points])
    wisp = fit_linear(WISP_TERMS, x, y, train, test, rng, boot, True)
    return wisp, fit_target_zhu(samples, grid, spec, seed, boot, "architecture")


def fit_target_zhu(
    samples: Sequence[Sample],
    grid: Sequence[GridConfig],
    spec: ModelArchitecture,
    seed: int,
    boot: int,
    flops: ZhuFlops,
) -> LinearFit:
    """The target's Eq. 17 fit over ``flops`` FLOPs, split as :func:`fit_target`'s."""
    points, y, train, test = _target_points(samples, grid)
    rows = [(s.shape.num_linear, s.shape.num_interactions, 1) for s in points]
    rng = np.random.default_rng(seed + 1)
    x = _zhu_design(spec, rows, flops)
    return fit_linear(ZHU_TERMS, x, y, train, test, rng, boot, nonnegative=True)


def fit_draft(
    name: str, samples: Sequence[DraftSample], spec: ModelArchitecture | None, seed: int, boot: int
) -> DraftProfile:
    rng = np.random.default_rng(seed)
    train, test = split_indices(len(samples), 0.3, rng)
    y = np.array([s.time_s for s in samples])
    x = wisp_design([s.shape for s in samples])
    x[:, 3] = [s.num_passes for s in samples]  # c is per pass
    wisp = fit_linear(WISP_TERMS, x, y, train, test, rng, boot, nonnegative=True)
    if spec is None:
        return DraftProfile(name, tuple(samples), wisp, None, per_token_s(samples))
    rows = [(s.shape.num_linear, s.shape.num_interactions, s.num_passes) for s in samples]
    x_zhu = _zhu_design(spec, rows, "architecture")
    zhu = fit_linear(ZHU_TERMS, x_zhu, y, train, test, rng, boot, nonnegative=True)
    x_printed = _zhu_design(spec, rows, "printed")
    printed = fit_linear(ZHU_TERMS, x_printed, y, train, test, rng, boot, nonnegative=True)
    return DraftProfile(name, tuple(samples), wisp, zhu, per_token_s(samples), printed)
