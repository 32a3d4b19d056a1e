"""A profile run's samples fitted (Zhu et al. seed 001, §II-D; WISP seed 000, App. C):
the target's and drafter's Eq. 19, and their Eq. 17 over the architecture's FLOPs
(``flops: architecture``, the fleet simulator's ``cost_model: {kind: zhu}``) and, from the
same samples, over Zhu's printed FLOPs (``flops: printed``, what a ``pipeline:``
scenario's stages are priced by)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

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
from edgespec.profiling.grid import GridConfig
from edgespec.profiling.measure import Sample


@dataclass(frozen=True, slots=True)
class DraftProfile:
    """The drafter's measurements and fits (``zhu`` and ``zhu_printed``, Eq. 17 over the
    architecture's and Zhu's printed FLOPs, are None for a model-free drafter). Eq. 19
    and the per-token time are the single-session propose calls'; Eq. 17 is the batched
    calls' when there are any (:meth:`zhu_samples`)."""

    name: str
    samples: tuple[DraftSample, ...]
    wisp: LinearFit
    zhu: LinearFit | None
    per_token_s: float
    zhu_printed: LinearFit | None = None

    def single_samples(self) -> tuple[DraftSample, ...]:
        """The propose calls (what Eq. 19 and the per-token time are fitted on)."""
        return tuple(s for s in self.samples if not s.batched)

    def zhu_samples(self) -> tuple[DraftSample, ...]:
        """What Eq. 17 is fitted on: the batched calls, or the propose calls if none."""
        return tuple(s for s in self.samples if s.batched) or self.single_samples()


def _zhu_design(
    spec: ModelArchitecture, rows: Sequence[tuple[int, int, int]], flops: ZhuFlops
) -> Any:
    """[Σ FLOPs, passes] for rows of (N_linear, N_interactions, passes), the FLOPs those
    a loaded ``flops`` profile prices a pass by (:class:`ZhuCost` with c1 = 1, c2 = 0)."""
    count = ZhuCost(spec, 1.0, 0.0, flops)
    return np.array([[count.batch_time_s(0, lin, inter, 0), n] for lin, inter, n in rows])


class _Timed(Protocol):
    @property
    def time_s(self) -> float: ...


T = TypeVar("T", bound=_Timed)


def median_by(samples: Sequence[T], key: Callable[[T], Hashable]) -> list[T]:
    """Per ``key``, its median run (the lower median for an even count), in the order the
    keys first appear."""
    by_key: dict[Hashable, list[T]] = {}
    for s in samples:
        by_key.setdefault(key(s), []).append(s)
    out = []
    for runs in by_key.values():
        ordered = sorted(runs, key=lambda s: s.time_s)
        out.append(ordered[(len(ordered) - 1) // 2])
    return out


def median_runs(samples: Sequence[Sample]) -> list[Sample]:
    """Per configuration, its median run (the lower median for an even count): one point
    per configuration as in App. C, robust to a run slowed by another process."""
    return sorted(median_by(samples, lambda s: s.config_index), key=lambda s: s.config_index)


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
    """Eq. 19 on the propose calls; Eq. 17 (over both FLOPs) on the batched calls' median
    run per (b, context, kind), as the target's per configuration, split at random (the
    propose calls and their split when none is batched)."""
    rng = np.random.default_rng(seed)
    single = [s for s in samples if not s.batched]
    train, test = split_indices(len(single), 0.3, rng)
    y = np.array([s.time_s for s in single])
    x = wisp_design([s.shape for s in single])
    x[:, 3] = [s.num_passes for s in single]  # c is per pass
    wisp = fit_linear(WISP_TERMS, x, y, train, test, rng, boot, nonnegative=True)
    if spec is None:
        return DraftProfile(name, tuple(samples), wisp, None, per_token_s(single))
    points = median_by(
        [s for s in samples if s.batched], lambda s: (s.batch_size, s.context_tokens, s.kind)
    )
    if points:
        y = np.array([s.time_s for s in points])
        train, test = split_indices(len(points), 0.3, rng)
    rows = [(s.shape.num_linear, s.shape.num_interactions, s.num_passes) for s in points or single]
    x_zhu = _zhu_design(spec, rows, "architecture")
    zhu = fit_linear(ZHU_TERMS, x_zhu, y, train, test, rng, boot, nonnegative=True)
    x_printed = _zhu_design(spec, rows, "printed")
    printed = fit_linear(ZHU_TERMS, x_printed, y, train, test, rng, boot, nonnegative=True)
    return DraftProfile(name, tuple(samples), wisp, zhu, per_token_s(single), printed)
