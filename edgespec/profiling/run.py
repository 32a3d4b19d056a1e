"""``edgespec profile`` end to end: measure, fit, write the simulator's profile files.

Files written for ``--out DIR/NAME.yaml`` (each in the format
:func:`edgespec.hardware.cost_models.load_profile` reads; for ``NAME.yml`` each YAML
sibling ends in ``.yml``: :func:`edgespec.profiling.files.profile_files` names them):

* ``NAME.yaml`` — ``kind: wisp``, the target's verification-time estimator (Eq. 19);
* ``NAME-zhu.yaml`` — ``kind: zhu``, the target's Eq. 17 fit, only when the target is a
  simulator model preset (a zhu profile names its preset; otherwise the coefficients are
  in the report only), with ``flops: architecture`` (fitted against
  :meth:`ModelArchitecture.flops`, not Zhu's printed Eqs. 13–14), and ``NAME-zhu-printed.yaml``,
  the same samples fitted over Zhu's printed FLOPs (``flops: printed``, what a
  ``pipeline:`` scenario's ``verify_profile`` takes);
* ``NAME-draft.yaml`` — ``kind: wisp``, the drafter's cost per propose call summed over its
  passes (what the simulator's draft cost model is asked for), and ``NAME-draft-zhu.yaml``
  and ``NAME-draft-zhu-printed.yaml`` (a ``draft_profile``) when the draft is a preset,
  fitted on its batched calls (``draft_batches``: :mod:`edgespec.profiling.draft_batch`),
  their ``measured_max_batch_size`` the largest b timed;
* ``NAME-report.json`` — every sample, every fit with its intervals and metrics.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from edgespec.hardware.cost_models import ZhuFlops, available
from edgespec.hardware.profile_source import PROFILE_SUFFIXES
from edgespec.output_paths import write_text_atomically
from edgespec.profiling.checkpoint import Checkpoint
from edgespec.profiling.draft import DraftSample, measure_drafter, model_spec
from edgespec.profiling.draft_batch import Cell, batch_cells, measure_batched
from edgespec.profiling.draft_checkpoint import DraftKey
from edgespec.profiling.files import profile_files
from edgespec.profiling.fit import LinearFit
from edgespec.profiling.grid import GridConfig, GridSpec, design_grid
from edgespec.profiling.measure import Sample, measure_grid
from edgespec.profiling.pair_fit import (
    DraftProfile,
    fit_draft,
    fit_target,
    fit_target_zhu,
    median_runs,
)
from edgespec.profiling.profile_yaml import (
    MeasuredRange,
    ProfileFile,
    ProfileOrigin,
    profile_text,
    target_range,
)
from edgespec.runtime.backends.base import TargetBackend

__all__ = [
    "DRAFT_CONTEXTS",
    "DraftProfile",
    "ProfileResult",
    "cpu_name",
    "draft_range",
    "fit_draft",
    "fit_target",
    "median_runs",
    "profile_pair",
    "write_profiles",
]
"""The fits are :mod:`edgespec.profiling.pair_fit`'s, importable from here too."""


DRAFT_CONTEXTS = (16, 64, 256)
"""The context lengths, tokens, a drafter is timed at."""


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
    zhu_printed: LinearFit | None = None
    """Eq. 17 over Zhu's printed FLOPs, from the same samples (``None``: not fitted)."""


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def profile_pair(
    target_name: str,
    target_model: Any,
    backend: TargetBackend,
    spec: GridSpec,
    draft: tuple[str, Callable[[], Any], Any | None] | None = None,
    draft_contexts: Sequence[int] = DRAFT_CONTEXTS,
    gamma: int = 4,
    num_bootstrap: int = 1000,
    on_config: Callable[[int], None] | None = None,
    resume: Checkpoint | None = None,
    on_measured: Callable[[int, list[Sample], int], None] | None = None,
    draft_batches: Sequence[int] = (),
    on_draft_cell: Callable[[Cell, list[DraftSample]], None] | None = None,
) -> ProfileResult:
    """Measure and fit a target (and optionally a drafter: (name, backend factory, HF
    model or None for a model-free drafter)) on this machine; ``resume`` holds the
    configurations an interrupted run already measured (see :func:`measure_grid`) and the
    drafter's batch cells; a model drafter is also timed batched at each of
    ``draft_batches`` (:func:`measure_batched`, each cell handed to ``on_draft_cell``)."""
    grid = design_grid(spec)
    done = resume.samples if resume is not None else None
    samples, num_prompts = measure_grid(backend, grid, spec, on_config, done, on_measured)
    num_prompts += resume.num_prompts if resume is not None else 0
    arch = model_spec(target_model, target_name)
    wisp, zhu = fit_target(samples, grid, arch, spec.seed, num_bootstrap)
    printed = fit_target_zhu(samples, grid, arch, spec.seed, num_bootstrap, "printed")
    draft_profile = None
    if draft is not None:
        cells = resume.draft_cells if resume is not None else {}
        batched = (draft_batches, cells, on_draft_cell)
        draft_profile = _profile_draft(
            draft, backend.vocab_size, draft_contexts, gamma, spec, num_bootstrap, batched
        )
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
        printed,
    )


def _profile_draft(
    draft: tuple[str, Callable[[], Any], Any | None],
    vocab_size: int,
    contexts: Sequence[int],
    gamma: int,
    spec: GridSpec,
    num_bootstrap: int,
    batched: tuple[
        Sequence[int],
        Mapping[DraftKey, tuple[DraftSample, ...]],
        Callable[[Cell, list[DraftSample]], None] | None,
    ],
) -> DraftProfile:
    """The drafter (name, backend factory, HF model or None) timed through its propose
    calls and, a model drafter, batched at each of ``batched``'s batch sizes (the cells a
    resumed run timed skipped, each new cell handed to its callback), then fitted."""
    name, make, model = draft
    batches, resumed, on_draft_cell = batched
    runs = max(spec.runs, 3)  # propose calls are cheap; the fit needs >= 4 training rows
    samples = measure_drafter(
        make, vocab_size, contexts, gamma, runs, spec.warmup_runs, spec.seed + 7
    )
    if model is not None and batches:
        timed = {(b, n): cell for (d, g, b, n), cell in resumed.items() if (d, g) == (name, gamma)}
        samples += measure_batched(
            model, vocab_size, batch_cells(batches, contexts), gamma,
            runs, spec.warmup_runs, spec.seed + 11, timed, on_draft_cell,
        )  # fmt: skip
    d_spec = None if model is None else model_spec(model, name)
    return fit_draft(name, samples, d_spec, spec.seed + 2, num_bootstrap)


def write_profiles(
    result: ProfileResult, out: Path, command: str, tool: str = "edgespec profile"
) -> list[Path]:
    """Write the profile files next to ``out`` (see the module docstring), each sibling
    named by :func:`profile_files`, each saying ``tool`` measured it (``edgespec
    calibrate`` for its fresh profile) with ``command``; a sibling this run does not write
    (an earlier run's draft, say) is removed first, so that no reader pairs it with this
    profile."""
    if out.suffix not in PROFILE_SUFFIXES:
        raise ValueError(f"--out must end in .yaml or .yml, got {str(out)!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    files = profile_files(out)
    presets = set(available("models"))
    t, d = result.target, result.draft
    fits: list[tuple[Path, str, LinearFit | None, str, ZhuFlops]] = [
        (out, t, result.wisp, "wisp", "architecture"),
        (files.target_zhu, t, result.zhu, "zhu", "architecture"),
        (files.target_zhu_printed, t, result.zhu_printed, "zhu", "printed"),
    ]
    if d is not None:
        fits += [
            (files.draft, d.name, d.wisp, "wisp", "architecture"),
            (files.draft_zhu, d.name, d.zhu, "zhu", "architecture"),
            (files.draft_zhu_printed, d.name, d.zhu_printed, "zhu", "printed"),
        ]
    kept = [  # a zhu profile must name a simulator model preset
        (path, model, fit, kind, flops)
        for path, model, fit, kind, flops in fits
        if fit is not None and (kind == "wisp" or model in presets)
    ]
    for stale in set(files.finished) - {path for path, *_ in kept} - {files.report}:
        stale.unlink(missing_ok=True)
    origin = ProfileOrigin(result.hardware, command, result.load_average, tool)
    written = []
    drafts = (files.draft, files.draft_zhu, files.draft_zhu_printed)
    for path, model, fit, kind, flops in kept:
        draft = path in drafts
        measured = _range(result)
        if draft and d:  # the samples its fit is of: Eq. 19 single-session, Eq. 17 batched
            measured = draft_range(d.single_samples() if kind == "wisp" else d.zhu_samples())
        clock = "wall" if draft else result.clock  # a propose call is timed by perf_counter
        role = "draft" if draft else "target"
        profile = ProfileFile(role, model, kind, fit, clock, measured, flops)
        write_text_atomically(path, profile_text(profile, origin))
        written.append(path)
    write_text_atomically(files.report, json.dumps(_report(result, command), indent=1))
    return [*written, files.report]


def _range(result: ProfileResult) -> MeasuredRange | None:
    return target_range([s.entries for s in result.samples])


def draft_range(samples: Sequence[DraftSample]) -> MeasuredRange | None:
    """A drafter's range: its largest batch of sessions, and the longest context plus
    the γ tokens drafted."""
    if not samples:
        return None
    contexts = [s.context_tokens + s.gamma for s in samples]
    return MeasuredRange(max(s.batch_size for s in samples), max(contexts))


def _json(fit: LinearFit | None) -> dict[str, Any] | None:
    return None if fit is None else fit.as_json()


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
        "wisp": result.wisp.as_json(),
        "zhu": result.zhu.as_json(),
        "zhu_printed": _json(result.zhu_printed),
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
            "wisp": draft.wisp.as_json(),
            "zhu": _json(draft.zhu),
            "zhu_printed": _json(draft.zhu_printed),
            "samples": [asdict(s) for s in draft.samples],
        },
    }
