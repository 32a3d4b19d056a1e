"""``edgespec calibrate``'s first step when no ``--profile`` is given: the pair profiled
at the scenario's shapes (:func:`scenario_grid`, :func:`profile_scenario`) and the lines
that report the fit (:func:`profile_summary`, and :func:`fit_warning` when the held-out R²
is below :data:`MIN_PROFILE_R2`)."""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from edgespec.calibration.folder import PARTIAL
from edgespec.errors import UserInputError
from edgespec.profiling.quality import MIN_PROFILE_R2
from edgespec.sweeps.progress import LINE_GAP_S


def scenario_grid(prompt_tokens: int, max_new_tokens: int, gamma: int, clients: int) -> Any:
    """A profiling grid covering the scenario's shapes: cold starts of 1..clients prompts,
    follow-ups of 1..γ+1 new tokens over the prompt plus half / all of the output."""
    from edgespec.profiling.grid import GridSpec

    p, g = prompt_tokens, gamma
    return GridSpec(
        cold_totals=tuple(sorted({p + g, 2 * (p + g), clients * (p + g)})),
        new_tokens=tuple(sorted({1, 2, max(1, g // 2 + 1), g + 1})),
        # a follow-up's total exceeds its new tokens (short prompts and outputs: raised)
        totals=tuple(sorted({max(p + max_new_tokens // 2, g + 2), max(p + max_new_tokens, g + 2)})),
        memory_batch_sizes=tuple(sorted({1, max(1, clients // 2), clients})),
        max_batch_size=clients, num_random=6, num_mixed=6, num_test=12,
        warmup_runs=2, runs=3,
    )  # fmt: skip


def profile_summary(r2: float, mape_pct: float, path: Path) -> str:
    """The line a fresh profile is reported in (stdout, and ``comparison.md``)."""
    return f"profile: target held-out R² {r2:.3f}, MAPE {mape_pct:.1f}%; wrote {path}"


def fit_warning(r2: float) -> str | None:
    """The warning for a held-out R² shown (3 decimals) below :data:`MIN_PROFILE_R2`, or
    nan (no variation to explain), saying what to do; ``None`` at or above it."""
    shown = f"{r2:.3f}"
    if float(shown) >= MIN_PROFILE_R2:
        return None
    return (
        f"warning: held-out R² {shown} is below {MIN_PROFILE_R2}: the profile's verify-time "
        "estimator explains little of the measured times, so the comparison tests the fit "
        "more than the simulator; profile again with more --runs (and --warmup) on a quieter "
        "machine (--threads 1 on a shared one), or give a better profile with --profile"
    )


@dataclass(frozen=True, slots=True)
class FreshProfile:
    """A profile calibrate made: its target file, and the lines reporting its fit
    (:func:`profile_summary`, then :func:`fit_warning` when there is one)."""

    path: Path
    fit_lines: tuple[str, ...]


def _progress(index: int, total: int) -> None:
    if (index + 1) % 10 == 0 or index + 1 == total:
        print(f"  profiled {index + 1}/{total} configurations", file=sys.stderr, flush=True)


@dataclass(slots=True)
class DraftCellLines:
    """Progress of a model draft's batched timing, called as each (b, context) cell is
    timed: ``  timed draft batch b=2 at 64 tokens (5/12 cells)`` on ``stream`` (stderr), for
    the first and the last cell and otherwise at most one each :data:`LINE_GAP_S`."""

    cells: Sequence[tuple[int, int]]
    stream: TextIO
    clock: Callable[[], float] = time.monotonic
    shown_s: float | None = None

    def __call__(self, cell: tuple[int, int], found: object) -> None:
        done, now = self.cells.index(cell) + 1, self.clock()
        last = done == len(self.cells)
        if not last and self.shown_s is not None and now - self.shown_s < LINE_GAP_S:
            return
        self.shown_s = now
        b, tokens = cell
        line = f"  timed draft batch b={b} at {tokens} tokens ({done}/{len(self.cells)} cells)"
        print(line, file=self.stream, flush=True)


def _resumed(args: argparse.Namespace, partial: Path, setup: Any, num_configs: int) -> Any:
    """With ``--resume``, the partial profile's measurements (said on stderr), refused when
    another calibration's settings wrote it; else ``None``."""
    if not args.resume:
        return None
    from edgespec.profiling.checkpoint import CheckpointError, load_checkpoint

    try:
        resume = load_checkpoint(partial, setup, "--overwrite in place of --resume")
    except CheckpointError as exc:
        raise UserInputError(f"--resume: {exc}") from None
    done = len(resume.samples)
    print(f"resuming: {done} of {num_configs} configurations already measured", file=sys.stderr)
    return resume


def profile_scenario(
    args: argparse.Namespace,
    out: Path,
    target: tuple[str, Any, Any],
    draft: tuple[str, Any, Any],
    prompts: list[list[tuple[int, ...]]],
) -> FreshProfile:
    """Profile the pair at the scenario's shapes: writes ``profile.yaml`` (and the
    draft's, and the report) to ``out``; the summary goes to stdout, a fit warning to
    stderr (``edgespec calibrate: warning: ...``). A model draft is also timed batched at
    ``edgespec profile``'s default batch sizes, as the draft's Zhu files written with the
    profile are fitted on those calls there (:mod:`edgespec.profiling.draft_batch`), its
    progress on stderr (:class:`DraftCellLines`). The files say ``edgespec calibrate``
    measured them."""
    from edgespec.profiling.checkpoint import CheckpointWriter, setup_of
    from edgespec.profiling.checks import DRAFT_BATCHES
    from edgespec.profiling.draft_batch import batch_cells
    from edgespec.profiling.grid import design_grid
    from edgespec.profiling.run import profile_pair, write_profiles

    (t_name, t_model, backend), (d_name, make_draft, d_model) = target, draft
    p = round(statistics.mean(len(prompt) for ps in prompts for prompt in ps))  # mean prompt
    spec = scenario_grid(p, args.max_new_tokens, args.gamma, args.clients)
    spec = replace(spec, warmup_runs=args.warmup, runs=args.runs)
    num_configs = len(design_grid(spec))
    contexts = (p, p + args.max_new_tokens // 2, p + args.max_new_tokens)
    cells = DraftCellLines(batch_cells(DRAFT_BATCHES, contexts), sys.stderr)
    print(
        f"profiling {t_name} + {d_name} ({len(prompts)} clients' shapes) ...",
        file=sys.stderr,
        flush=True,
    )
    setup = setup_of(t_name, spec, args.threads)
    resume = _resumed(args, out / PARTIAL, setup, num_configs)
    with CheckpointWriter(out / PARTIAL, setup, append=resume is not None) as writer:

        def on_draft_cell(cell: tuple[int, int], found: Any) -> None:
            writer.add_draft((d_name, args.gamma, *cell), found)
            cells(cell, found)

        result = profile_pair(
            t_name, t_model, backend, spec, (d_name, make_draft, d_model),
            draft_contexts=contexts, gamma=args.gamma, num_bootstrap=200,
            on_config=lambda i: _progress(i, num_configs), resume=resume,
            on_measured=writer.add, draft_batches=DRAFT_BATCHES, on_draft_cell=on_draft_cell,
        )  # fmt: skip
    command = "edgespec calibrate " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    paths = write_profiles(result, out / "profile.yaml", command, "edgespec calibrate")
    (out / PARTIAL).unlink()  # the report holds every sample
    fit = result.wisp.test
    summary = profile_summary(fit.r2, fit.mape_pct, paths[0])
    print(summary, flush=True)
    warning = fit_warning(fit.r2)
    if warning is None:
        return FreshProfile(out / "profile.yaml", (summary,))
    print(f"edgespec calibrate: {warning}", file=sys.stderr, flush=True)
    return FreshProfile(out / "profile.yaml", (summary, warning))
