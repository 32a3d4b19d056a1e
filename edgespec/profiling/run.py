"""``edgespec profile`` end to end: measure, fit, write the simulator's profile files.

Files written for ``--out DIR/NAME.yaml`` (each in the format
:func:`edgespec.hardware.cost_models.load_profile` reads; for ``NAME.yml`` each YAML
sibling ends in ``.yml``: :func:`edgespec.profiling.files.profile_files` names them):

* ``NAME.yaml`` — ``kind: wisp``, the target's verification-time estimator (Eq. 19);
* ``NAME-zhu.yaml`` — ``kind: zhu``, the target's Eq. 17 fit, only when the target is a
  simulator model preset (a zhu profile names its preset; otherwise the coefficients are
  in the report only), with ``flops: architecture`` (fitted against
  :meth:`ModelArchitecture.flops`, not Zhu's printed Eqs. 13–14);
* ``NAME-draft.yaml`` — ``kind: wisp``, the drafter's cost per propose call summed over its
  passes (what the simulator's draft cost model is asked for), and ``NAME-draft-zhu.yaml``
  when the draft is a preset model;
* ``NAME-report.json`` — every sample, every fit with its intervals and metrics.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgespec.hardware.cost_models import ModelArchitecture, available
from edgespec.hardware.profile_source import PROFILE_SUFFIXES
from edgespec.output_paths import write_text_atomically
from edgespec.profiling.checkpoint import Checkpoint
from edgespec.profiling.draft import DraftSample, measure_drafter, model_spec, per_token_s
from edgespec.profiling.files import profile_files
from edgespec.profiling.fit import (
    WISP_TERMS,
    ZHU_TERMS,
    LinearFit,
    fit_linear,
    split_indices,
    wisp_design,
)
from edgespec.profiling.measure import GridConfig, GridSpec, Sample, design_grid, measure_grid
from edgespec.profiling.profile_yaml import (
    MeasuredRange,
    ProfileFile,
    ProfileOrigin,
    profile_text,
    target_range,
)
from edgespec.runtime.backends.base import TargetBackend


@dataclass(frozen=True, slots=True)
class DraftProfile:
    """The drafter's measurements and fits (``zhu`` is None for a model-free drafter)."""

    name: str
    samples: tuple[DraftSample, ...]
    wisp: LinearFit
    zhu: LinearFit | None
    per_token_s: float


@dataclass(frozen=True, slots=True)
class ProfileResult:
    """Everything one profile run measured and fitted."""

    target: str
    grid: tuple[GridConfig, ...]
    samples: tuple[Sample, ...]
    num_prompts: int
    wisp: LinearFit
    zhu: LinearFit
    draft: DraftProfile | None
    hardware: str
    load_average: tuple[float, float, float]
    clock: str = "wall"
    """What the target's timed passes measured (:attr:`GridSpec.clock`)."""


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _zhu_design(spec: ModelArchitecture, rows: Sequence[tuple[int, int, int]]) -> Any:
    """[Σ FLOPs, passes] for rows of (N_linear, N_interactions, passes)."""
    return np.array([[spec.flops(lin, inter), passes] for lin, inter, passes in rows])


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


def fit_target(
    samples: Sequence[Sample],
    grid: Sequence[GridConfig],
    spec: ModelArchitecture,
    seed: int,
    boot: int,
) -> tuple[LinearFit, LinearFit]:
    """WISP and Zhu fits on the training configurations' median runs, metrics on the
    held-out configurations' median runs."""
    points = median_runs(samples)
    split = np.array([grid[s.config_index].split for s in points])
    train, test = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    y = np.array([s.time_s for s in points])
    shapes = [s.shape for s in points]
    rng = np.random.default_rng(seed)
    wisp = fit_linear(WISP_TERMS, wisp_design(shapes), y, train, test, rng, boot, True)
    x_zhu = _zhu_design(spec, [(b.num_linear, b.num_interactions, 1) for b in shapes])
    rng = np.random.default_rng(seed + 1)
    zhu = fit_linear(ZHU_TERMS, x_zhu, y, train, test, rng, boot, nonnegative=True)
    return wisp, zhu


def fit_draft(
    name: str, samples: Sequence[DraftSample], spec: ModelArchitecture | None, seed: int, boot: int
) -> DraftProfile:
    rng = np.random.default_rng(seed)
    train, test = split_indices(len(samples), 0.3, rng)
    y = np.array([s.time_s for s in samples])
    x = wisp_design([s.shape for s in samples])
    x[:, 3] = [s.num_passes for s in samples]  # c is per pass
    wisp = fit_linear(WISP_TERMS, x, y, train, test, rng, boot, nonnegative=True)
    zhu = None
    if spec is not None:
        rows = [(s.shape.num_linear, s.shape.num_interactions, s.num_passes) for s in samples]
        x_zhu = _zhu_design(spec, rows)
        zhu = fit_linear(ZHU_TERMS, x_zhu, y, train, test, rng, boot, nonnegative=True)
    return DraftProfile(name, tuple(samples), wisp, zhu, per_token_s(samples))


def profile_pair(
    target_name: str,
    target_model: Any,
    backend: TargetBackend,
    spec: GridSpec,
    draft: tuple[str, Callable[[], Any], Any | None] | None = None,
    draft_contexts: Sequence[int] = (16, 64, 256),
    gamma: int = 4,
    num_bootstrap: int = 1000,
    on_config: Callable[[int], None] | None = None,
    resume: Checkpoint | None = None,
    on_measured: Callable[[int, list[Sample], int], None] | None = None,
) -> ProfileResult:
    """Measure and fit a target (and optionally a drafter: (name, backend factory, HF
    model or None for a model-free drafter)) on this machine; ``resume`` holds the
    configurations an interrupted run already measured (see :func:`measure_grid`)."""
    grid = design_grid(spec)
    done = resume.samples if resume is not None else None
    samples, num_prompts = measure_grid(backend, grid, spec, on_config, done, on_measured)
    num_prompts += resume.num_prompts if resume is not None else 0
    wisp, zhu = fit_target(
        samples, grid, model_spec(target_model, target_name), spec.seed, num_bootstrap
    )
    draft_profile = None
    if draft is not None:
        name, make, model = draft
        d_samples = measure_drafter(
            make,
            backend.vocab_size,
            draft_contexts,
            gamma,
            max(spec.runs, 3),  # propose calls are cheap; the fit needs >= 4 training rows
            spec.warmup_runs,
            spec.seed + 7,
        )
        d_spec = None if model is None else model_spec(model, name)
        draft_profile = fit_draft(name, d_samples, d_spec, spec.seed + 2, num_bootstrap)
    return ProfileResult(
        target_name,
        tuple(grid),
        tuple(samples),
        num_prompts,
        wisp,
        zhu,
        draft_profile,
        cpu_name(),
        os.getloadavg(),
        spec.clock,
    )


def write_profiles(result: ProfileResult, out: Path, command: str) -> list[Path]:
    """Write the profile files next to ``out`` (see the module docstring), each sibling
    named by :func:`profile_files`; a sibling this run does not write (an earlier run's
    draft, say) is removed first, so that no reader pairs it with this profile."""
    if out.suffix not in PROFILE_SUFFIXES:
        raise ValueError(f"--out must end in .yaml or .yml, got {str(out)!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    files = profile_files(out)
    presets = set(available("models"))
    fits: list[tuple[Path, str, LinearFit, str]] = [(out, result.target, result.wisp, "wisp")]
    fits.append((files.target_zhu, result.target, result.zhu, "zhu"))
    if result.draft is not None:
        fits.append((files.draft, result.draft.name, result.draft.wisp, "wisp"))
        if result.draft.zhu is not None:
            fits.append((files.draft_zhu, result.draft.name, result.draft.zhu, "zhu"))
    # a zhu profile must name a simulator model preset
    fits = [fit for fit in fits if fit[3] == "wisp" or fit[1] in presets]
    for stale in set(files.finished) - {path for path, *_ in fits} - {files.report}:
        stale.unlink(missing_ok=True)
    origin = ProfileOrigin(result.hardware, command, result.load_average)
    written = []
    for path, model, fit, kind in fits:
        draft = path in (files.draft, files.draft_zhu)
        measured = draft_range(result.draft) if draft and result.draft else _range(result)
        clock = "wall" if draft else result.clock  # a propose call is timed by perf_counter
        profile = ProfileFile("draft" if draft else "target", model, kind, fit, clock, measured)
        write_text_atomically(path, profile_text(profile, origin))
        written.append(path)
    write_text_atomically(files.report, json.dumps(_report(result, command), indent=1))
    return [*written, files.report]


def _range(result: ProfileResult) -> MeasuredRange | None:
    return target_range([s.entries for s in result.samples])


def draft_range(draft: DraftProfile) -> MeasuredRange | None:
    """A drafter's range: one request, its longest context plus the γ tokens drafted."""
    contexts = [s.context_tokens + s.gamma for s in draft.samples]
    return MeasuredRange(1, max(contexts)) if contexts else None


def _fit_json(fit: LinearFit) -> dict[str, Any]:
    return {
        "coefficients": fit.as_dict(),
        "clipped_to_0": list(fit.clipped),
        "intervals_95": dict(zip(fit.names, fit.intervals, strict=True)),
        "train": asdict(fit.train),
        "test": asdict(fit.test),
        "test_intervals_95": dict(
            zip(("r2", "mae_s", "mape_pct"), fit.test_intervals, strict=True)
        ),
    }


def _report(result: ProfileResult, command: str) -> dict[str, Any]:
    draft = result.draft
    return {
        "command": command,
        "target": result.target,
        "hardware": result.hardware,
        "load_average": result.load_average,
        "clock": result.clock,
        "num_configs": len(result.grid),
        "num_unique_prompts": result.num_prompts,
        "wisp": _fit_json(result.wisp),
        "zhu": _fit_json(result.zhu),
        "samples": [
            {
                "config": s.config_index,
                "category": result.grid[s.config_index].category,
                "split": result.grid[s.config_index].split,
                "run": s.run,
                "entries": s.entries,
                "time_s": s.time_s,
            }
            for s in result.samples
        ],
        "draft": None
        if draft is None
        else {
            "name": draft.name,
            "per_token_s": draft.per_token_s,
            "wisp": _fit_json(draft.wisp),
            "zhu": None if draft.zhu is None else _fit_json(draft.zhu),
            "samples": [asdict(s) for s in draft.samples],
        },
    }
